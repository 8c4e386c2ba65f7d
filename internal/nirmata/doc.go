// Package nirmata is the Nirmata REST surface of the gateway (docs/PROTOCOL.md sections
// 3–5): the JSON body of POST /llm-apps/chat decoded into the chat model, and answers,
// JSONL delta streams, Nirmata chunked streams, errors and capabilities encoded from it.
// Deployed gollm clients parse these bytes, so the encoders' output is pinned by tests
// byte for byte.
//
// Every wire is declared as Go structs and read and written with json/v2
// (github.com/go-json-experiment/json). The request's messages, tools and tool choice are
// the shapes both REST surfaces share, in package chatjson, which says what the body
// accepts where the contract is silent; stream must be a boolean.
package nirmata
