package toolguard

import (
	"context"
	"strings"

	"github.com/nirmata/llm-gateway/internal/apart"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// Holder holds the tool calls of a stream whose calls are checked (docs/PROTOCOL.md
// 13.2): text and reasoning pass as they come; a call is held until its block ends, then
// goes out whole, as its header, one arguments event (with its violations) and its end
// marker. When no call can be repaired, each call goes out as soon as it is checked; when
// one may be, every call waits for the end of the answer (a repair replaces them all), and
// so does done. The answer tool's input (13.3), when checked, is held until the end of
// the answer and goes out as one content event before done. Not safe for concurrent use.
//
// A stream's events pass through its Holder on the goroutine that relays them, whose stack
// keeps the size its deepest call needed for as long as the stream is open (httpx.Serve);
// checking a call (its schema looked up or compiled, its arguments read) needs some 8 KiB
// more than relaying, so every check a Holder makes, Review's too, runs on a goroutine of
// its own (apart.Run).
type Holder struct {
	check *Check
	// untilDone: calls and done wait for the end of the answer; done is the held done.
	untilDone bool
	done      *chat.Event
	calls     []heldCall
	// answer is the answer tool's input so far, when it is checked.
	answer strings.Builder
	// sent are the calls that went out.
	sent []chat.ToolCall
}

// heldCall is one call as its events built it.
type heldCall struct {
	index    int
	id, name string
	args     []byte
}

// Hold returns the Holder of a stream whose calls c checks; nil when c is nil.
func (c *Check) Hold() *Holder {
	if c == nil {
		return nil
	}
	return &Holder{check: c, untilDone: c.canRepair}
}

// UntilDone reports whether calls and done wait for the end of the answer: a repair may
// replace them (Finish).
func (h *Holder) UntilDone() bool { return h.untilDone }

// Pass appends to out what of in may go out now.
func (h *Holder) Pass(in, out []chat.Event) []chat.Event {
	for i := range in {
		ev := &in[i]
		switch ev.Kind {
		case chat.EventToolCall:
			if ev.ToolCall.ID != "" {
				h.calls = append(h.calls, heldCall{index: ev.Index, id: ev.ToolCall.ID, name: ev.ToolCall.Name})
			} else if c := h.call(ev.Index); c != nil {
				c.args = append(c.args, ev.ToolCall.Arguments...)
			}
		case chat.EventToolCallEnd:
			if c := h.call(ev.Index); c != nil && !h.untilDone {
				out = h.pass(out, ev.Index, c)
			}
		case chat.EventContent:
			if ev.Answer && h.check.answer != nil {
				h.answer.WriteString(ev.Text)
				continue
			}
			out = append(out, *ev)
		case chat.EventDone:
			if h.untilDone {
				d := *ev
				h.done = &d
				continue
			}
			out = h.passDone(out, ev)
		default:
			out = append(out, *ev)
		}
	}
	return out
}

// pass checks c, the call of index, now whole, and appends it (send). Its own function,
// as are passDone and send: a stream's events go through Pass on a stack kept small
// (httpx.Serve), and each case's locals count only when it runs.
func (h *Holder) pass(out []chat.Event, index int, c *heldCall) []chat.Event {
	call := c.toolCall()
	var v verdict
	apart.Run(func() { v = h.check.check(&call) })
	if settle([]chat.ToolCall{call}, []verdict{v}, false, &h.check.Outcomes) == Invalid {
		call.ValidationErrors = v.violations
		h.check.Outcome = Invalid
	}
	return h.send(out, index, call)
}

// passDone appends done, after the answer tool's input, checked, when it was held.
func (h *Holder) passDone(out []chat.Event, done *chat.Event) []chat.Event {
	if h.answer.Len() > 0 {
		text := h.answer.String()
		var v verdict
		apart.Run(func() { v = h.check.checkAnswer(text) })
		if settle(nil, []verdict{v}, false, &h.check.Outcomes) == Invalid {
			h.check.Outcome = Invalid
		}
		out = append(out, chat.Event{Kind: chat.EventContent, Text: text, Answer: true})
	}
	return append(out, *done)
}

// call is the held call of index, nil for none.
func (h *Holder) call(index int) *heldCall {
	for i := len(h.calls) - 1; i >= 0; i-- {
		if h.calls[i].index == index {
			return &h.calls[i]
		}
	}
	return nil
}

func (c *heldCall) toolCall() chat.ToolCall {
	args := string(c.args)
	if args == "" {
		args = "{}"
	}
	return chat.ToolCall{ID: c.id, Type: "function", Name: c.name, Arguments: args}
}

// send appends a whole call: its header, its arguments with their violations, its end.
func (h *Holder) send(out []chat.Event, index int, call chat.ToolCall) []chat.Event {
	h.sent = append(h.sent, call)
	return append(out,
		chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{ID: call.ID, Type: "function", Name: call.Name}},
		chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{Arguments: call.Arguments, ValidationErrors: call.ValidationErrors}},
		chat.Event{Kind: chat.EventToolCallEnd, Index: index})
}

// Held is the answer the held calls, the held answer tool's input and done make, for
// Check.Review; nil when done has not come. answerID is the toolUseId of the answer tool's
// call the machine saw.
func (h *Holder) Held(answerID string) *chat.Response {
	if h.done == nil {
		return nil
	}
	resp := &chat.Response{Finish: h.done.Finish, Usage: h.done.Usage}
	for i := range h.calls {
		resp.ToolCalls = append(resp.ToolCalls, h.calls[i].toolCall())
	}
	if h.answer.Len() > 0 {
		resp.Text, resp.AnswerID = h.answer.String(), answerID
	}
	return resp
}

// Review is Check.Review of first, the answer Held made, on a goroutine of its own.
func (h *Holder) Review(ctx context.Context, first *chat.Response, turn bedrock.Message, sent *bedrock.ConverseRequest, call Caller) (resp *chat.Response, err error) {
	apart.Run(func() { resp, err = h.check.Review(ctx, first, turn, sent, call) })
	return resp, err
}

// Finish appends the answer tool's input when resp, the answer Review settled, came
// through it, then resp's calls, then done.
func (h *Holder) Finish(out []chat.Event, resp *chat.Response) []chat.Event {
	if resp.AnswerID != "" {
		out = append(out, chat.Event{Kind: chat.EventContent, Text: resp.Text, Answer: true})
	}
	for i, call := range resp.ToolCalls {
		out = h.send(out, i, call)
	}
	return append(out, chat.Event{Kind: chat.EventDone, Finish: resp.Finish, Usage: resp.Usage})
}

// Sent is how many calls went out.
func (h *Holder) Sent() int { return len(h.sent) }

// IDs are the ids of the calls that went out.
func (h *Holder) IDs() []string {
	ids := make([]string, len(h.sent))
	for i := range h.sent {
		ids[i] = h.sent[i].ID
	}
	return ids
}
