package responses

import (
	"github.com/nirmata/llm-gateway/internal/apart"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// The stream of docs/PROTOCOL.md 16: server-sent events, each "event: <type>" and "data:
// <json>" with the type and a sequence number (0, 1, 2, … without gaps). The chat core's
// events (text, reasoning fragments, whole reasoning blocks, a tool call's header,
// fragments and end, done) open, fill and close the response's output items in order.

// event is one event of the stream: the members its type has, the others left out.
type event struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	Response       *response  `json:"response,omitzero"`
	OutputIndex    *int       `json:"output_index,omitzero"`
	ItemID         string     `json:"item_id,omitzero"`
	Item           any        `json:"item,omitzero"`
	ContentIndex   *int       `json:"content_index,omitzero"`
	SummaryIndex   *int       `json:"summary_index,omitzero"`
	Part           any        `json:"part,omitzero"`
	Delta          *string    `json:"delta,omitzero"`
	Text           *string    `json:"text,omitzero"`
	Arguments      *string    `json:"arguments,omitzero"`
	Input          *string    `json:"input,omitzero"`
	Logprobs       []struct{} `json:"logprobs,omitzero"`
}

// Event types.
const (
	evCreated          = "response.created"
	evInProgress       = "response.in_progress"
	evCompleted        = "response.completed"
	evIncomplete       = "response.incomplete"
	evFailed           = "response.failed"
	evItemAdded        = "response.output_item.added"
	evItemDone         = "response.output_item.done"
	evPartAdded        = "response.content_part.added"
	evPartDone         = "response.content_part.done"
	evTextDelta        = "response.output_text.delta"
	evTextDone         = "response.output_text.done"
	evArgumentsDelta   = "response.function_call_arguments.delta"
	evArgumentsDone    = "response.function_call_arguments.done"
	evInputDelta       = "response.custom_tool_call_input.delta"
	evInputDone        = "response.custom_tool_call_input.done"
	evSummaryAdded     = "response.reasoning_summary_part.added"
	evSummaryDone      = "response.reasoning_summary_part.done"
	evSummaryTextDelta = "response.reasoning_summary_text.delta"
	evSummaryTextDone  = "response.reasoning_summary_text.done"
)

// open is the kind of output item being streamed.
type open uint8

const (
	openNone open = iota
	openReasoning
	openMessage
	openCall
)

// streamer turns one call's chat events into the stream's events. It holds the output
// items so far, for the last event's whole response, and the one open item. Not safe for
// concurrent use.
type streamer struct {
	c       *call
	head    head
	seq     int
	started bool
	items   []any
	// open is the item being streamed, at index len(items); text its text or a call's
	// arguments so far.
	open  open
	index int
	id    string
	text  []byte
	// A reasoning item's summary parts, and whether one is open; its blocks, and the
	// Bedrock model id that writes them (the call's).
	blocks      []chat.ReasoningBlock
	model       string
	summary     []summaryText
	summaryOpen bool
	summaryAt   int
	// A tool call's header.
	callID, name string
	// answered: a message or a tool call was streamed.
	answered bool
	zero     int
	// ev and resp are the event and the response being encoded, reused.
	ev   event
	resp response
	enc  chatjson.Encoder
}

// streamer is the streamer of a call whose answer model, a Bedrock model id, writes.
func (c *call) streamer(h head, model string) *streamer {
	return &streamer{c: c, head: h, model: model}
}

// appendEvent appends the events of ev; the first call also writes response.created and
// response.in_progress.
func (s *streamer) appendEvent(dst []byte, ev *chat.Event) []byte {
	if !s.started {
		s.started = true
		s.resp = s.c.response(&s.head)
		dst = s.emit(dst, event{Type: evCreated, Response: &s.resp})
		dst = s.emit(dst, event{Type: evInProgress, Response: &s.resp})
	}
	switch ev.Kind {
	case chat.EventReasoning:
		if ev.Text == "" {
			return dst
		}
		dst = s.openItem(dst, openReasoning)
		if !s.c.summary {
			return dst
		}
		if !s.summaryOpen {
			s.summaryOpen = true
			s.text = s.text[:0]
			dst = s.emit(dst, event{Type: evSummaryAdded, ItemID: s.id, OutputIndex: &s.index, SummaryIndex: s.summaryIndex(),
				Part: &summaryText{Type: summaryTextPart}})
		}
		s.text = append(s.text, ev.Text...)
		dst = s.emit(dst, event{Type: evSummaryTextDelta, ItemID: s.id, OutputIndex: &s.index, SummaryIndex: s.summaryIndex(), Delta: &ev.Text})
	case chat.EventReasoningBlock:
		dst = s.openItem(dst, openReasoning)
		dst = s.closeSummary(dst)
		s.blocks = append(s.blocks, ev.Block)
	case chat.EventContent:
		if ev.Text == "" {
			return dst
		}
		dst = s.openItem(dst, openMessage)
		s.text = append(s.text, ev.Text...)
		dst = s.emit(dst, event{Type: evTextDelta, ItemID: s.id, OutputIndex: &s.index, ContentIndex: &s.zero, Delta: &ev.Text, Logprobs: []struct{}{}})
	case chat.EventToolCall:
		if ev.ToolCall.ID != "" {
			dst = s.closeItem(dst)
			s.callID, s.name = ev.ToolCall.ID, ev.ToolCall.Name
			dst = s.openItem(dst, openCall)
		}
		if ev.ToolCall.Arguments == "" || s.open != openCall {
			return dst
		}
		s.text = append(s.text, ev.ToolCall.Arguments...)
		if !s.c.names.whole(s.name) {
			dst = s.emit(dst, event{Type: evArgumentsDelta, ItemID: s.id, OutputIndex: &s.index, Delta: &ev.ToolCall.Arguments})
		}
	case chat.EventToolCallEnd:
		dst = s.closeItem(dst)
	case chat.EventDone:
		dst = s.closeItem(dst)
		if !s.answered {
			dst = s.openItem(dst, openMessage)
			dst = s.closeItem(dst)
		}
		s.resp = s.c.response(&s.head)
		s.resp.Output = s.items
		s.resp.finish(ev.Finish, ev.Usage, "")
		if s.resp.Store {
			s.c.save(&s.resp) // before the client learns the response's id is done
		}
		typ := evCompleted
		if s.resp.Status == statusIncomplete {
			typ = evIncomplete
		}
		dst = s.emit(dst, event{Type: typ, Response: &s.resp})
	}
	return dst
}

// appendError appends response.failed: the response with the items completed so far and
// the failure.
func (s *streamer) appendError(dst []byte, f fault.Failure) []byte {
	s.resp = s.c.response(&s.head)
	s.resp.Output = s.items
	s.resp.fail(f)
	return s.emit(dst, event{Type: evFailed, Response: &s.resp})
}

func (s *streamer) summaryIndex() *int {
	s.summaryAt = len(s.summary)
	return &s.summaryAt
}

// openItem makes an item of kind the open one, closing another first.
func (s *streamer) openItem(dst []byte, kind open) []byte {
	if s.open == kind && kind != openCall {
		return dst
	}
	dst = s.closeItem(dst)
	s.open, s.index, s.text = kind, len(s.items), s.text[:0]
	var item any
	switch kind {
	case openReasoning:
		s.id = s.head.itemID(prefixReasoning, s.index)
		s.summary, s.blocks = []summaryText{}, nil
		item = &reasoningItem{Type: typeReasoning, ID: s.id, Summary: []summaryText{}}
	case openMessage:
		s.id = s.head.itemID(prefixMessage, s.index)
		s.answered = true
		item = &messageItem{Type: typeMessage, ID: s.id, Status: statusInProgress, Role: chat.RoleAssistant, Content: []outputText{}}
	case openCall:
		s.answered = true
		item = s.c.callItem(&s.head, s.index, s.callID, s.name, "")
		switch it := item.(type) {
		case *functionCallItem:
			it.Status, s.id = statusInProgress, it.ID
		case *customCallItem:
			s.id = it.ID
		case *toolSearchCallItem:
			it.Status, s.id = statusInProgress, it.ID
		}
	}
	dst = s.emit(dst, event{Type: evItemAdded, OutputIndex: &s.index, Item: item})
	if kind == openMessage {
		dst = s.emit(dst, event{Type: evPartAdded, ItemID: s.id, OutputIndex: &s.index, ContentIndex: &s.zero, Part: &outputText{
			Type: outputTextPart, Annotations: []struct{}{}, Logprobs: []struct{}{}}})
	}
	return dst
}

// closeSummary ends the open summary part of a reasoning item.
func (s *streamer) closeSummary(dst []byte) []byte {
	if !s.summaryOpen {
		return dst
	}
	s.summaryOpen = false
	text := string(s.text)
	part := summaryText{Type: summaryTextPart, Text: text}
	dst = s.emit(dst, event{Type: evSummaryTextDone, ItemID: s.id, OutputIndex: &s.index, SummaryIndex: s.summaryIndex(), Text: &text})
	dst = s.emit(dst, event{Type: evSummaryDone, ItemID: s.id, OutputIndex: &s.index, SummaryIndex: s.summaryIndex(), Part: &part})
	s.summary = append(s.summary, part)
	return dst
}

// closeItem ends the open item, if any: its done events, then output_item.done with the
// whole item.
func (s *streamer) closeItem(dst []byte) []byte {
	var item any
	switch s.open {
	case openNone:
		return dst
	case openReasoning:
		dst = s.closeSummary(dst)
		item = s.c.reasoningItem(s.id, s.summary, s.model, s.blocks)
	case openMessage:
		text := string(s.text)
		part := newOutputText(text)
		dst = s.emit(dst, event{Type: evTextDone, ItemID: s.id, OutputIndex: &s.index, ContentIndex: &s.zero, Text: &text, Logprobs: []struct{}{}})
		dst = s.emit(dst, event{Type: evPartDone, ItemID: s.id, OutputIndex: &s.index, ContentIndex: &s.zero, Part: &part})
		item = &messageItem{Type: typeMessage, ID: s.id, Status: statusCompleted, Role: chat.RoleAssistant, Content: []outputText{part}}
	case openCall:
		arguments := string(s.text)
		if arguments == "" {
			arguments = "{}"
		}
		item = s.c.callItem(&s.head, s.index, s.callID, s.name, arguments)
		switch it := item.(type) {
		case *functionCallItem:
			dst = s.emit(dst, event{Type: evArgumentsDone, ItemID: s.id, OutputIndex: &s.index, Arguments: &it.Arguments})
		case *customCallItem:
			dst = s.emit(dst, event{Type: evInputDelta, ItemID: s.id, OutputIndex: &s.index, Delta: &it.Input})
			dst = s.emit(dst, event{Type: evInputDone, ItemID: s.id, OutputIndex: &s.index, Input: &it.Input})
		}
	}
	s.open = openNone
	s.items = append(s.items, item)
	return s.emit(dst, event{Type: evItemDone, OutputIndex: &s.index, Item: item})
}

// emit appends one event with the next sequence number. The event is encoded from the
// streamer's own, reused: passed to the encoder as an interface, one built per event would
// be allocated per event. One that carries a whole output item, content part or response
// is encoded on a goroutine of its own (apart.Run): its nesting takes some 3 KiB of stack,
// twice a delta's, which on the stream's relay went past the 8 KiB it otherwise keeps for
// as long as the stream is open.
func (s *streamer) emit(dst []byte, ev event) []byte {
	s.ev = ev
	s.ev.SequenceNumber = s.seq
	s.seq++
	dst = append(dst, "event: "...)
	dst = append(dst, ev.Type...)
	dst = append(dst, "\ndata: "...)
	if ev.Item != nil || ev.Response != nil || ev.Part != nil {
		apart.Run(func() { dst = s.enc.Append(dst, &s.ev) })
	} else {
		dst = s.enc.Append(dst, &s.ev)
	}
	return append(dst, "\n\n"...)
}
