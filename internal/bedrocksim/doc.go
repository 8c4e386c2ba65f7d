// Package bedrocksim is an embedded Bedrock Runtime look-alike (docs/PROTOCOL.md section 9): an
// http.Handler that answers POST /model/{modelId}/converse and /converse-stream the way the
// real service does on the wire, so the real aws-sdk-go-v2 bedrockruntime client and the
// gateway's own upstream client can talk to it unchanged.
//
// It exists for two reasons: a newcomer can run the gateway with no AWS account (--sim), and
// tests exercise the whole translation against a strict upstream. Strict matters more than
// clever: every request is checked against the rules of docs/BEDROCK.md sections A, G
// (reasoning), H (prompt caching), I (structured output, strict tools) and K and refused with
// Bedrock's own ValidationException
// text, so a translation bug fails here the way it would fail in production. The rules that
// differ by model come from the simulator's own model table (models.go, written from
// docs/BEDROCK.md sections F and F.2), and the request is read into its own structs (wire.go):
// the package shares no code with the gateway it referees, so a mistake in the gateway's
// capability table or wire structs cannot pass here by being shared.
//
// Answers are deterministic (the same request body gives the same bytes, prompt-cache usage
// aside): a tool named in the last user turn is called with arguments built from its JSON
// schema, tool results are quoted back in text (a tool whose result is an error is called
// again first: once, or whenever the result asks for it, as the gateway's repair turn does),
// anything else gets a short text answer; on Claude, Anthropic's disable_parallel_tool_use
// (additionalModelRequestFields.tool_choice, docs/BEDROCK.md J) makes it call the named tools
// one per answer.
//
// Structured output (output.go): on a model that has it, outputConfig.textFormat (or Claude's
// output_config.format) makes a text answer JSON built from the schema, an instance of it; an
// answer that calls tools still does, without text. toolSpec.strict is taken on the same
// models, and a strict tool's calls always follow its schema.
//
// Reasoning (reasoning.go, sign.go): a request that turns thinking on in its model family's
// form gets an answer that starts with a reasoning block saying what the answer does. Claude's
// blocks are signed with a key of the simulator over the model, the conversation and the
// text, so that a history sending them back is checked as Bedrock checks it: unchanged, to
// the same model and conversation, and first in the tool turn being answered.
//
// Prompt caching (cache.go): each Server remembers, per foundation model, the prefix before
// every cachePoint that reaches the model's minimum, for the point's TTL, in a bounded LRU,
// and reports what a request read from and wrote to it in the usage.
//
// Options add latency and inject faults (throttling, 5xx, hangs, in-stream exceptions,
// truncated streams, redacted reasoning, tool arguments that break their schema: the last
// counted only on answers that call a tool) for tests and benchmarks, each limited if asked to
// one model or to one region, read from the request's SigV4 credential scope (faults.go), so
// one simulator serves every region of a gateway that fails over between them; and set the
// clock of the prompt cache.
package bedrocksim
