// Package nirmata is the Nirmata REST surface of the gateway (docs/PROTOCOL.md sections
// 3–5): the JSON body of POST /llm-apps/chat decoded into the chat model, and answers,
// JSONL delta streams, Nirmata chunked streams, errors and capabilities encoded from it.
// Deployed gollm clients parse these bytes, so the encoders' output is pinned by tests
// byte for byte.
//
// Every wire is declared as Go structs and read and written with json/v2
// (github.com/go-json-experiment/json); members that take several shapes (content as a
// string or parts, tools in two forms, tool_choice as a string or an object, stop as a
// string or a list, arguments as a string or an object) have UnmarshalJSONFrom methods of
// their own. Where the contract is silent:
//
//   - Unknown members are ignored at every depth; a member that appears twice keeps its
//     last value.
//   - null for a scalar or a list means absent; a null element of a list (a null message,
//     tool, part or stop string) is an error.
//   - max_tokens is a whole number within int32: 1024.0 and 1e3 are accepted, 1.5 and
//     "1024" are not. stream must be a boolean.
//   - Arguments sent as an object keep their text exactly as written, and a tool's
//     parameters keep theirs with the whitespace between tokens removed (key order,
//     escapes and number spelling reach Bedrock unchanged).
//   - image_url may be an object {url, detail} or a bare URL string.
//   - Invalid UTF-8 and unpaired surrogates become U+FFFD.
//   - When a body is both malformed and misshapen, the syntax error wins.
package nirmata
