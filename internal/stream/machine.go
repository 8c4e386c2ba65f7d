package stream

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// ErrTruncated: the upstream stream ended without messageStop, so the answer may be
// incomplete (docs/BEDROCK.md B: a stream cut before messageStop ends without an error). It
// wraps fault.ErrUpstream: 502 / Unavailable.
var ErrTruncated = fmt.Errorf("%w: the model's stream ended before it was complete; retry the request", fault.ErrUpstream)

// Events is the stream of decoded Bedrock events a Machine reads. Next returns io.EOF at a
// clean end of the stream. *bedrock.EventStream implements it.
type Events interface {
	Next() (bedrock.StreamEvent, error)
}

var _ Events = (*bedrock.EventStream)(nil)

// Machine turns the events of one ConverseStream into the gateway's stream events (see the
// package documentation). Not safe for concurrent use: it belongs to the goroutine serving
// one request.
type Machine struct {
	plan *translate.Plan

	tools []toolBlock // by ordinal
	last  int         // ordinal of the last tool block looked up: deltas come in runs

	// answers are the blocks calling the synthetic answer tool of a json_schema request
	// (docs/PROTOCOL.md 13.3): their input is content, they take no ordinal. hold keeps
	// the text that may turn out not to be the answer's.
	answers []answerBlock
	hold    translate.TextHold

	// thinking is the reasoning block being streamed; reasoning the blocks that ended.
	thinking  reasoningBlock
	reasoning []chat.ReasoningBlock

	stopReason string // Bedrock's, as sent
	finish     chat.FinishReason
	usage      chat.Usage
	stopped    bool // messageStop came
	metadata   bool // metadata came
	done       bool // the done event was produced
	err        error
}

// reasoningBlock is the state of the reasoning block being streamed. Bedrock opens none
// with contentBlockStart (docs/BEDROCK.md G6): its first delta opens it.
type reasoningBlock struct {
	open  bool
	block int // contentBlockIndex
	text  strings.Builder
	chat.ReasoningBlock
}

// toolBlock is the state of one tool call, keyed by Bedrock's contentBlockIndex; its
// position in Machine.tools is the call's ordinal.
type toolBlock struct {
	block   int    // contentBlockIndex
	id      string // the client's id of the call
	name    string // the client's name of the tool
	args    bool   // a non-empty arguments fragment was produced
	stopped bool   // contentBlockStop came (or the stream finished)
	// dropped: a call after the first when the answer keeps only one (plan.FirstCallOnly);
	// none of its events reach the client.
	dropped bool
}

// answerBlock is a call of the synthetic answer tool, keyed by contentBlockIndex. Only the
// first one's input is the answer (translate.TextHold); later ones are dropped.
type answerBlock struct {
	block   int
	id      string // Bedrock's toolUseId
	first   bool
	args    bool // a non-empty fragment was passed on as content
	stopped bool
}

// NewMachine returns a Machine for one stream. plan, the request's translation plan, maps Bedrock's tool names and
// tool-use ids back to the client's (nil: unchanged), and names the synthetic answer tool.
func NewMachine(plan *translate.Plan) *Machine {
	return &Machine{plan: plan, hold: translate.NewTextHold(plan)}
}

// Step reads one event from src and appends the client events it produces to out. It
// returns io.EOF, with the final events in out, once the stream is complete (done was
// produced); the errors of Feed and Finish; and whatever src.Next returns other than
// io.EOF, unchanged (an in-stream *bedrock.APIError, a transport error). Bedrock's
// metadata is its last event, so Step does not read on after done; close src either way.
func (m *Machine) Step(src Events, out []chat.Event) ([]chat.Event, error) {
	if m.err != nil {
		return out, m.err
	}
	if m.done {
		return out, io.EOF
	}
	ev, err := src.Next()
	if errors.Is(err, io.EOF) {
		if out, err = m.Finish(out); err != nil {
			return out, err
		}
		return out, io.EOF
	}
	if err != nil {
		m.err = err
		return out, err
	}
	if out, err = m.Feed(ev, out); err != nil {
		return out, err
	}
	if m.done {
		return out, io.EOF
	}
	return out, nil
}

// Feed consumes one Bedrock event and appends the client events it produces to out. It
// goes by ev.Type, as bedrock.EventStream sets it; events after done are ignored. It
// returns an error wrapping fault.ErrUpstream for a malformed_* stop reason or for
// events that break Bedrock's protocol; after an error, every call returns the same error.
func (m *Machine) Feed(ev bedrock.StreamEvent, out []chat.Event) ([]chat.Event, error) {
	if m.err != nil {
		return out, m.err
	}
	if m.done {
		return out, nil
	}
	switch ev.Type {
	case bedrock.EventContentBlockDelta:
		if d := ev.ContentBlockDelta; d != nil {
			return m.delta(d, out)
		}
	case bedrock.EventContentBlockStart:
		if s := ev.ContentBlockStart; s != nil && s.Start.ToolUse != nil {
			return m.startTool(s.ContentBlockIndex, s.Start.ToolUse, out)
		}
		// Other block kinds carry nothing the protocol has.
	case bedrock.EventContentBlockStop:
		if s := ev.ContentBlockStop; s != nil {
			out = m.stopBlock(s.ContentBlockIndex, out)
		}
	case bedrock.EventMessageStop:
		if s := ev.MessageStop; s != nil && !m.stopped {
			finish, err := translate.FinishReason(s.StopReason)
			if err != nil {
				return out, m.fail(err)
			}
			m.stopReason, m.finish, m.stopped = s.StopReason, finish, true
			if m.metadata {
				out = m.finishStream(out)
			}
		}
	case bedrock.EventMetadata:
		if md := ev.Metadata; md != nil && !m.metadata {
			if md.Usage != nil {
				m.usage = translate.Usage(md.Usage)
			}
			m.metadata = true
			if m.stopped {
				out = m.finishStream(out)
			}
		}
	}
	// messageStart, and event types Bedrock adds later, produce nothing.
	return out, nil
}

// stopBlock ends the block of Bedrock's index: a tool call, the answer tool's input or
// the reasoning; text blocks stop without anything to say. Its own function, as the
// other cases' are: each case's locals count only when it runs, on the small stack a
// stream is relayed on (httpx.Serve).
func (m *Machine) stopBlock(index int, out []chat.Event) []chat.Event {
	if i := m.lookup(index); i >= 0 {
		return m.stopTool(i, out)
	}
	if a := m.answerAt(index); a >= 0 {
		return m.stopAnswer(a, out)
	}
	if m.thinking.open && m.thinking.block == index {
		return m.stopReasoning(out)
	}
	return out
}

// Finish is called when the upstream ended cleanly (Events.Next returned io.EOF). It
// appends the done event if it is still due, with zero usage when metadata never came. It
// returns ErrTruncated if messageStop never came, and the earlier error after a failure.
func (m *Machine) Finish(out []chat.Event) ([]chat.Event, error) {
	switch {
	case m.err != nil:
		return out, m.err
	case m.done:
		return out, nil
	case !m.stopped:
		return out, m.fail(ErrTruncated)
	}
	return m.finishStream(out), nil
}

// StopReason is Bedrock's stop reason as sent, "" before messageStop; the core logs the
// ones translate.KnownStopReason does not know.
func (m *Machine) StopReason() string { return m.stopReason }

// Usage is the usage of the done event: zero until metadata came, or if it had none.
func (m *Machine) Usage() chat.Usage { return m.usage }

// ToolCalls is the number of tool calls passed on so far.
func (m *Machine) ToolCalls() int { return len(m.tools) - m.Dropped() }

// Dropped is the number of tool calls left out so far: all but the first when the answer
// keeps only one, all when the tool budget is spent.
func (m *Machine) Dropped() int {
	n := 0
	for i := range m.tools {
		if m.tools[i].dropped {
			n++
		}
	}
	return n
}

func (m *Machine) fail(err error) error {
	m.err = err
	return err
}

func (m *Machine) delta(d *bedrock.ContentBlockDeltaEvent, out []chat.Event) ([]chat.Event, error) {
	switch {
	case d.Delta.Text != nil:
		if m.thinking.open && m.thinking.block != d.ContentBlockIndex {
			out = m.stopReasoning(out)
		}
		if text := m.hold.Text(*d.Delta.Text); text != "" {
			out = append(out, contentEvent(text))
		}
	case d.Delta.ToolUse != nil:
		i := m.lookup(d.ContentBlockIndex)
		if i < 0 {
			if a := m.answerAt(d.ContentBlockIndex); a >= 0 {
				return m.answerDelta(a, d.Delta.ToolUse.Input, out)
			}
			return out, m.fail(fmt.Errorf("%w: Bedrock sent tool input for content block %d, which never started", fault.ErrUpstream, d.ContentBlockIndex))
		}
		t := &m.tools[i]
		if t.stopped {
			return out, m.fail(fmt.Errorf("%w: Bedrock sent tool input for content block %d after it stopped", fault.ErrUpstream, d.ContentBlockIndex))
		}
		if frag := d.Delta.ToolUse.Input; frag != "" && !t.dropped {
			t.args = true
			out = append(out, fragmentEvent(i, frag))
		}
	case d.Delta.ReasoningContent != nil:
		out = m.reasoningDelta(d.ContentBlockIndex, d.Delta.ReasoningContent, out)
	}
	// Delta kinds Bedrock adds later are not part of the protocol.
	return out, nil
}

// reasoningDelta adds a piece of the reasoning block at index block: its text goes out as
// it comes, and the whole block once it stops.
func (m *Machine) reasoningDelta(block int, d *bedrock.ReasoningDelta, out []chat.Event) []chat.Event {
	r := &m.thinking
	if r.open && r.block != block {
		out = m.stopReasoning(out)
	}
	if !r.open {
		r.open, r.block = true, block
	}
	switch {
	case d.Text != nil:
		if *d.Text != "" {
			r.text.WriteString(*d.Text)
			out = append(out, chat.Event{Kind: chat.EventReasoning, Text: *d.Text})
		}
	case d.Signature != nil:
		r.Signature += *d.Signature
	case d.RedactedContent != nil:
		r.Redacted, r.Data = true, r.Data+*d.RedactedContent
	}
	return out
}

// stopReasoning ends the open reasoning block: the whole block goes out, and is kept for
// Reasoning.
func (m *Machine) stopReasoning(out []chat.Event) []chat.Event {
	r := &m.thinking
	b := r.ReasoningBlock
	if !b.Redacted {
		b.Text = r.text.String()
	}
	r.open, r.ReasoningBlock = false, chat.ReasoningBlock{}
	r.text.Reset()
	m.reasoning = append(m.reasoning, b)
	return append(out, chat.Event{Kind: chat.EventReasoningBlock, Block: b})
}

// Reasoning is the reasoning blocks that ended so far, in Bedrock's order.
func (m *Machine) Reasoning() []chat.ReasoningBlock { return m.reasoning }

// ToolCallIDs appends the client ids of the tool calls passed on so far to ids.
func (m *Machine) ToolCallIDs(ids []string) []string {
	for i := range m.tools {
		if !m.tools[i].dropped {
			ids = append(ids, m.tools[i].id)
		}
	}
	return ids
}

// ToolNames appends the client names of the tools of the calls passed on so far to names.
func (m *Machine) ToolNames(names []string) []string {
	for i := range m.tools {
		if !m.tools[i].dropped {
			names = append(names, m.tools[i].name)
		}
	}
	return names
}

func (m *Machine) startTool(block int, tu *bedrock.ToolUseBlockStart, out []chat.Event) ([]chat.Event, error) {
	if m.lookup(block) >= 0 || m.answerAt(block) >= 0 {
		return out, m.fail(fmt.Errorf("%w: Bedrock started content block %d twice", fault.ErrUpstream, block))
	}
	if tu.ToolUseID == "" {
		// An empty id would make the header indistinguishable from a fragment, and the
		// client could not answer the call.
		return out, m.fail(fmt.Errorf("%w: Bedrock started a tool call without a toolUseId", fault.ErrUpstream))
	}
	if m.thinking.open {
		out = m.stopReasoning(out)
	}
	if m.plan.IsAnswerTool(tu.Name) {
		m.answers = append(m.answers, answerBlock{block: block, id: tu.ToolUseID, first: m.hold.AnswerCall()})
		return out, nil
	}
	ordinal := len(m.tools)
	exhausted := m.plan != nil && m.plan.BudgetExhausted
	id, name := m.plan.ToolCallID(tu.ToolUseID), m.plan.ToolName(tu.Name)
	m.tools = append(m.tools, toolBlock{block: block, id: id, name: name, dropped: exhausted || ordinal > 0 && m.plan.FirstCallOnly()})
	m.last = ordinal
	if m.tools[ordinal].dropped {
		return out, nil
	}
	return append(out, headerEvent(ordinal, id, name)), nil
}

// stopTool closes tool call i: a "{}" fragment if it streamed no arguments, so every
// call's fragments concatenate to a JSON object, then the end marker.
func (m *Machine) stopTool(i int, out []chat.Event) []chat.Event {
	t := &m.tools[i]
	if t.stopped {
		return out
	}
	t.stopped = true
	if t.dropped {
		return out
	}
	if !t.args {
		t.args = true
		out = append(out, fragmentEvent(i, "{}"))
	}
	return append(out, toolCallEndEvent(i))
}

// finishStream closes the tool calls Bedrock left open and produces done. An answer whose
// calls were all dropped (the tool budget is spent) finishes with "stop".
func (m *Machine) finishStream(out []chat.Event) []chat.Event {
	if m.thinking.open {
		out = m.stopReasoning(out)
	}
	for i := range m.answers {
		out = m.stopAnswer(i, out)
	}
	for i := range m.tools {
		out = m.stopTool(i, out)
	}
	if text := m.hold.End(); text != "" {
		out = append(out, contentEvent(text))
	}
	if m.finish == chat.FinishToolCalls && (len(m.tools) > 0 || m.hold.Answered()) && m.ToolCalls() == 0 {
		m.finish = chat.FinishStop
	}
	m.done = true
	return append(out, doneEvent(m.finish, m.stopReason, m.usage))
}

// answerDelta passes a fragment of the answer tool's input on as content.
func (m *Machine) answerDelta(a int, frag string, out []chat.Event) ([]chat.Event, error) {
	b := &m.answers[a]
	if b.stopped {
		return out, m.fail(fmt.Errorf("%w: Bedrock sent tool input for content block %d after it stopped", fault.ErrUpstream, b.block))
	}
	if frag != "" && b.first {
		b.args = true
		out = append(out, answerEvent(frag))
	}
	return out, nil
}

// stopAnswer closes an answer tool call: "{}" as content if the answer streamed no input.
func (m *Machine) stopAnswer(a int, out []chat.Event) []chat.Event {
	b := &m.answers[a]
	if b.stopped {
		return out
	}
	b.stopped = true
	if b.first && !b.args {
		b.args = true
		out = append(out, answerEvent("{}"))
	}
	return out
}

// AnswerID is the Bedrock toolUseId of the answer tool's call whose input is the answer,
// "" when there is none (docs/PROTOCOL.md 13.3).
func (m *Machine) AnswerID() string {
	for i := range m.answers {
		if m.answers[i].first {
			return m.answers[i].id
		}
	}
	return ""
}

// answerAt returns the index in answers of the answer tool call in content block block,
// or -1. There is one in all but broken answers.
func (m *Machine) answerAt(block int) int {
	for i := range m.answers {
		if m.answers[i].block == block {
			return i
		}
	}
	return -1
}

// lookup returns the ordinal of the tool call in content block block, or -1. A response
// has few tool calls and deltas come in runs for one block, so a scan behind a one-entry
// cache beats a map; a slice indexed by block would trust Bedrock's numbers for its size.
func (m *Machine) lookup(block int) int {
	if m.last < len(m.tools) && m.tools[m.last].block == block {
		return m.last
	}
	for i := range m.tools {
		if m.tools[i].block == block {
			m.last = i
			return i
		}
	}
	return -1
}
