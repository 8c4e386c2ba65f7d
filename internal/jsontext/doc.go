// Package jsontext reads JSON text (RFC 8259) without encoding/json's reflection or its
// scanner's function call per byte. It is the gateway's one JSON scanner, in two shapes:
//
//   - Reader reads the values of a document in order, so a decoder decides per key what
//     to expect and can name the exact path of a mismatch. The REST request decoder in
//     package jsonapi is built on it, and so are package bedrock's decoders of Converse
//     answers and stream events. It allocates only for the strings it returns.
//   - Compact and Validate check a whole text in one pass; Compact also appends it
//     without insignificant whitespace, strings copied byte for byte (the translator
//     uses it for tool schemas, tool-call arguments and tool results).
//
// They accept exactly what encoding/json's Valid accepts, with one exception: arrays and
// objects may nest at most MaxDepth levels (encoding/json allows 10000), so that no input
// can exhaust the stack. Deeper text is refused with a *DepthError; RFC 8259 section 9
// lets a parser set such a limit. Like encoding/json, bytes that are not valid UTF-8 are
// accepted inside strings and refused outside: Compact, Validate and ReadValue keep them;
// ReadString (and so NextKey) decodes strings exactly as encoding/json does, replacing
// them and lone surrogates by U+FFFD.
//
// Errors are a *SyntaxError or a *DepthError, both naming a byte offset from the start of
// the input: "invalid character 'x' looking for beginning of value at byte 3",
// "unexpected end of input at byte 12", "nests deeper than 1000 levels at byte 1000".
package jsontext
