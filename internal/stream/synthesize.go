package stream

import "github.com/nirmata/llm-gateway/internal/chat"

// Synthesize turns a unary answer into the events a stream of it would produce, for models
// without streaming tool use (docs/BEDROCK.md E: the gateway calls Converse and streams the
// answer): the text as one content event (none when empty), then per tool call a header,
// one fragment with the complete arguments ("{}" when empty) and its end marker, then
// done. resp is the output of translate.Response, so names and ids are already the
// client's.
func Synthesize(resp *chat.Response) []chat.Event {
	out := make([]chat.Event, 0, 2+3*len(resp.ToolCalls))
	if resp.Text != "" {
		out = append(out, contentEvent(resp.Text))
	}
	for i, tc := range resp.ToolCalls {
		args := tc.Arguments
		if args == "" {
			args = "{}"
		}
		out = append(out, headerEvent(i, tc.ID, tc.Name), fragmentEvent(i, args), toolCallEndEvent(i))
	}
	return append(out, doneEvent(resp.Finish, resp.Usage))
}
