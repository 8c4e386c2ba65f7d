// Package jsonapi converts between the REST JSON of the wire contract (docs/PROTOCOL.md
// sections 3, 4 and 5) and the llmgateway.v1 proto messages. It is written by hand rather
// than with protojson because protojson is slow, its output is deliberately not
// byte-stable, and it cannot express the contract's polymorphic fields (content as
// string or parts, tool_choice as string or object, stop as string or list, arguments as
// string or object, tools in two forms). Pure code: no HTTP, no I/O.
//
// # Decoding (DecodeChatRequest)
//
// A single-pass parser, built on jsontext.Reader, reads the body in document order, so a
// misfit field is named by its exact JSON path ("messages[2].tool_calls[0].function.name:
// want a string, got number"). Every error wraps ErrInvalidJSON. Where the contract is
// silent:
//
//   - Unknown keys are skipped at every level (but must be well-formed JSON). A key that
//     appears twice keeps its last value, as in encoding/json.
//   - null for any scalar field, and for messages, tools, tool_calls, content, stop,
//     tool_choice, parameters, function and image_url, means absent. A null element of an
//     array (a null message, tool, part or stop string) is an error: it has no meaning.
//   - Only JSON types are checked here; values (roles, part types, tool names, whether
//     arguments text is JSON, max_tokens > 0, max_tools) are the translator's to check.
//     Decoding stays faithful: an empty stop string is kept, a missing parameters leaves
//     parameters_json empty ("an object with no properties" is applied by the translator).
//   - max_tokens must be a whole number within int32; 1024.0 and 1e3 are accepted (JSON
//     does not tell them apart from 1024), 1.5 and "1024" are not. temperature and top_p
//     are any JSON number within float64 range; stream must be a boolean (not "true").
//   - Only the body fields of section 3 are read: provider, client_type and chunked are
//     query parameters and are ignored in the body.
//   - tool_calls[].function.arguments may be a string (kept verbatim) or a JSON object,
//     whose text is kept exactly as written (whitespace and number spelling included),
//     so 12345678901234567890 is not rounded. Any other type is an error.
//   - A tool's parameters (either form) must be a JSON object. Its text goes to the
//     proto's parameters_json, with the whitespace between tokens removed and otherwise as
//     written: key order, string escapes and number spelling (12345678901234567890, 0.1,
//     1e999) reach the translator, and Bedrock, unchanged. The Struct field parameters is
//     left nil: structpb would sort the keys and round every number through float64, and
//     building it was the costliest part of decoding. Whether the object is a usable
//     schema (its root "type") is the translator's to check.
//   - A tool's keys each go to their own proto field, so the wrapped form fills
//     type/function and the flat form name/description/parameters_json; the translator
//     prefers function when both are present.
//   - image_url may be an object {url, detail} or a bare URL string.
//   - Strings are unescaped per RFC 8259; invalid UTF-8 and unpaired surrogates become
//     U+FFFD (as in encoding/json), so every proto string is valid UTF-8 and marshals.
//   - Nesting deeper than 1000 levels is refused (a body of 10 MiB of '[' would otherwise
//     overflow the stack). Numbers beyond float64 in tool_choice are refused: it becomes a
//     structpb.Value, whose numbers are float64 (protojson could not write ±Inf back).
//     In parameters and arguments objects numbers are text and kept as written.
//   - When a body is both malformed and misshapen, the syntax error wins: "body is not
//     valid JSON: … at byte N" (byte offsets count from 0).
//
// # Encoding (Append*)
//
// The encoders append to a caller's buffer and allocate nothing else. Strings go through
// jsonenc.AppendString, shared with the translator and the Converse encoder. Key order is fixed
// (the order of the contract's examples), so output is byte-stable. Strings are escaped
// for JSON only: <, > and & stay literal and non-ASCII stays raw UTF-8; control characters
// are escaped, and so are U+2028 and U+2029 (valid in JSON, but line terminators in
// JavaScript source before ES2019, so escaping them is free safety for JS consumers).
// Invalid UTF-8 in a proto string becomes U+FFFD.
//
// The shapes where the contract leaves a choice: a ChatResponse always has message and
// finish_reason; tool_calls is left out when empty, usage and metadata when nil. A
// complete tool call always has all four keys, with type "function" and arguments "{}"
// when unset. The tool_call stream delta rule is documented on AppendStreamEvent.
// Capabilities always has every key, with [] for empty lists.
package jsonapi
