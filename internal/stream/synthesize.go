package stream

import (
	"strings"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// Synthesize turns a unary answer into the events a stream of it would produce, for models
// without streaming tool use (docs/BEDROCK.md E: the gateway calls Converse and streams the
// answer): the text as one content event (none when empty), then per tool call a header,
// one fragment with the complete arguments ("{}" when empty) and the call's validation
// errors, and its end marker, then done. resp is the output of translate.Response, so names and ids are already the
// client's.
func Synthesize(resp *chat.Response) []chat.Event {
	out := make([]chat.Event, 0, 2+2*len(resp.Reasoning)+3*len(resp.ToolCalls))
	for _, b := range resp.Reasoning {
		if b.Text != "" && !b.Redacted {
			out = append(out, chat.Event{Kind: chat.EventReasoning, Text: b.Text})
		}
		out = append(out, chat.Event{Kind: chat.EventReasoningBlock, Block: b})
	}
	if resp.Text != "" {
		out = append(out, contentEvent(resp.Text))
	}
	for i, tc := range resp.ToolCalls {
		args := tc.Arguments
		if args == "" {
			args = "{}"
		}
		frag := fragmentEvent(i, args)
		frag.ToolCall.ValidationErrors = tc.ValidationErrors // docs/PROTOCOL.md 13.2: on the arguments
		out = append(out, headerEvent(i, tc.ID, tc.Name), frag, toolCallEndEvent(i))
	}
	return append(out, doneEvent(resp.Finish, resp.StopReason, resp.Usage))
}

// Collect is the unary answer a complete stream's events make, the inverse of Synthesize:
// for a unary request the gateway had to serve through ConverseStream. m is the Machine
// that produced events.
func Collect(events []chat.Event, m *Machine) *chat.Response {
	resp := &chat.Response{Reasoning: m.Reasoning(), StopReason: m.StopReason(), DroppedToolCalls: m.Dropped(),
		BudgetExhausted: m.plan != nil && m.plan.BudgetExhausted, AnswerID: m.AnswerID()}
	var text strings.Builder
	for _, e := range events {
		switch e.Kind {
		case chat.EventContent:
			text.WriteString(e.Text)
		case chat.EventToolCall:
			if e.ToolCall.ID != "" {
				resp.ToolCalls = append(resp.ToolCalls, e.ToolCall)
			} else if e.Index < len(resp.ToolCalls) {
				resp.ToolCalls[e.Index].Arguments += e.ToolCall.Arguments
			}
		case chat.EventDone:
			resp.Finish, resp.Usage = e.Finish, e.Usage
		}
	}
	resp.Text = text.String()
	return resp
}
