// Package bedrocksim is an embedded Bedrock Runtime look-alike (docs/PROTOCOL.md section 9): an
// http.Handler that answers POST /model/{modelId}/converse and /converse-stream the way the
// real service does on the wire, so the real aws-sdk-go-v2 bedrockruntime client and the
// gateway's own upstream client can talk to it unchanged.
//
// It exists for two reasons: a newcomer can run the gateway with no AWS account (--sim), and
// tests exercise the whole translation against a strict upstream. Strict matters more than
// clever: every request is checked against the rules of docs/BEDROCK.md section A and refused with
// Bedrock's own ValidationException text, so a translation bug fails here the way it would
// fail in production. The rules that differ by model come from the simulator's own model
// table (models.go, written from docs/BEDROCK.md section F), and the request is read into its
// own structs (wire.go): the package shares no code with the gateway it referees, so a mistake
// in the gateway's capability table or wire structs cannot pass here by being shared.
//
// Answers are deterministic (the same request body gives the same bytes): a tool named in
// the last user turn is called with arguments built from its JSON schema, tool results are
// quoted back in text, anything else gets a short text answer; on Claude, Anthropic's
// disable_parallel_tool_use (additionalModelRequestFields.tool_choice, docs/BEDROCK.md J) makes
// it call the named tools one per answer. Options add latency and
// inject faults (throttling, 5xx, hangs, in-stream exceptions, truncated streams) for tests
// and benchmarks.
package bedrocksim
