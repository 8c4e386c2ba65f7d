package stream

import llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"

// Synthesize turns a unary answer into the events a stream of it would produce, for models
// without streaming tool use (docs/BEDROCK.md E: the gateway calls Converse and streams the
// answer): the text as one content event (none when empty), then per tool call a header
// and one fragment with the complete arguments ("{}" when empty), then done. resp is the
// output of translate.Response, so names and ids are already the client's. It produces no
// tool_call_end markers (the output also goes to JSONL and gRPC clients); the Chunker
// writes the ToolStart lines at done, right after the calls.
func Synthesize(resp *llmgatewayv1.ChatResponse) []*llmgatewayv1.ChatStreamEvent {
	calls := resp.GetToolCalls()
	out := make([]*llmgatewayv1.ChatStreamEvent, 0, 2+2*len(calls))
	if msg := resp.GetMessage(); msg != "" {
		out = append(out, contentEvent(msg))
	}
	for i, tc := range calls {
		fn := tc.GetFunction()
		out = append(out, headerEvent(int32(i), tc.GetId(), fn.GetName()))
		args := fn.GetArguments()
		if args == "" {
			args = "{}"
		}
		out = append(out, fragmentEvent(int32(i), args))
	}
	var usage *llmgatewayv1.Usage
	if u := resp.GetUsage(); u != nil {
		// A copy: the events must not share a message with resp.
		usage = &llmgatewayv1.Usage{PromptTokens: u.GetPromptTokens(), CompletionTokens: u.GetCompletionTokens(), TotalTokens: u.GetTotalTokens()}
	}
	return append(out, doneEvent(resp.GetFinishReason(), usage))
}
