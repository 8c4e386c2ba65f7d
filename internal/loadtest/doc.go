// Package loadtest is the shared code of the load tools (cmd/loadgen, scripts/bench-e2e.sh,
// scripts/soak.sh): the request scenarios, a closed-loop runner that reads every answer to
// its end and classifies it, and readers for a process's CPU time and RSS in /proc.
//
// The runner counts a request as successful only when its answer is complete: a 200, and for
// a stream, a last line that is "done" (JSONL), "data: [DONE]" after well-formed chunks (OpenAI
// SSE) or a messageStop followed by metadata (Bedrock event stream); an OpenAI unary answer
// must also decode as a chat completion. Anything else is an error of a named kind, so a load
// run can never pass on fast failures.
package loadtest
