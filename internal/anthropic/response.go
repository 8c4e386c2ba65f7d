package anthropic

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
)

// The answers of docs/PROTOCOL.md 15.2 and 15.3, in Anthropic's key order
// (https://docs.anthropic.com/en/api/messages, .../messages-streaming), encoded by
// chatjson.Append.

// messageObject is the answer of POST /v1/messages, and the message of a stream's
// message_start.
type messageObject struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        usage          `json:"usage"`
}

// contentBlock is one block of an answer, with the members of its type only.
type contentBlock struct {
	Type      string         `json:"type"`
	Thinking  *string        `json:"thinking,omitzero"`
	Signature *string        `json:"signature,omitzero"`
	Data      *string        `json:"data,omitzero"`
	Text      *string        `json:"text,omitzero"`
	ID        string         `json:"id,omitzero"`
	Name      string         `json:"name,omitzero"`
	Input     jsontext.Value `json:"input,omitzero"`
}

type usage struct {
	InputTokens              int32 `json:"input_tokens"`
	CacheCreationInputTokens int32 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int32 `json:"cache_read_input_tokens"`
	OutputTokens             int32 `json:"output_tokens"`
}

// usageOf is the chat model's usage in Anthropic's terms: input_tokens counts the prompt
// tokens neither read from nor written to the cache (Bedrock's inputTokens), where the
// chat model's prompt tokens include both.
func usageOf(u chat.Usage) usage {
	return usage{
		InputTokens:              max(u.PromptTokens-u.CacheReadTokens-u.CacheWriteTokens, 0),
		CacheCreationInputTokens: u.CacheWriteTokens,
		CacheReadInputTokens:     u.CacheReadTokens,
		OutputTokens:             u.CompletionTokens,
	}
}

// Stop reasons (https://docs.anthropic.com/en/api/handling-stop-reasons).
const (
	stopEndTurn      = "end_turn"
	stopToolUse      = "tool_use"
	stopMaxTokens    = "max_tokens"
	stopSequence     = "stop_sequence"
	stopRefusal      = "refusal"
	bedrockStopMatch = "stop_sequence" // Bedrock's stopReason for a stop sequence met
)

// stopReasonOf is the stop_reason of an answer that finished for finish; bedrockStop, the
// stopReason Bedrock gave, tells a stop sequence from the end of a turn (both finish
// "stop"). The finish comes first: the core changes it where the answer differs from
// Bedrock's (a structured answer's tool call is text, calls dropped for the tool budget).
func stopReasonOf(finish chat.FinishReason, bedrockStop string) string {
	switch finish {
	case chat.FinishToolCalls:
		return stopToolUse
	case chat.FinishLength:
		return stopMaxTokens // max_tokens, and Bedrock's model_context_window_exceeded
	case chat.FinishContentFilter:
		return stopRefusal // content filtered, or a guardrail intervened
	}
	if bedrockStop == bedrockStopMatch {
		return stopSequence
	}
	return stopEndTurn
}

// answer is what encodes one call's answers and events: its id, the model name the client
// sent, and its stop sequences.
type answer struct {
	id, model string
	stops     []string
}

// stopSequence is the stop sequence an answer that stopped on one met: Converse does not
// say which, so it is known only when the request gave one; nil otherwise.
func (a *answer) stopSequence(reason string) *string {
	if reason != stopSequence || len(a.stops) != 1 {
		return nil
	}
	return &a.stops[0]
}

// appendMessage appends the unary answer: the reasoning blocks, the text, then the tool
// calls, as Bedrock ordered them.
func (a *answer) appendMessage(dst []byte, r *chat.Response) []byte {
	reason := stopReasonOf(r.Finish, r.StopReason)
	msg := messageObject{ID: a.id, Type: "message", Role: "assistant", Model: a.model,
		Content:    make([]contentBlock, 0, len(r.Reasoning)+1+len(r.ToolCalls)),
		StopReason: &reason, StopSequence: a.stopSequence(reason), Usage: usageOf(r.Usage)}
	for i := range r.Reasoning {
		msg.Content = append(msg.Content, reasoningBlock(&r.Reasoning[i]))
	}
	if r.Text != "" {
		msg.Content = append(msg.Content, contentBlock{Type: "text", Text: &r.Text})
	}
	for _, tc := range r.ToolCalls { // the translator gives arguments "{}" at least
		msg.Content = append(msg.Content, contentBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: jsontext.Value(tc.Arguments)})
	}
	return chatjson.Append(dst, &msg)
}

func reasoningBlock(b *chat.ReasoningBlock) contentBlock {
	if b.Redacted {
		return contentBlock{Type: "redacted_thinking", Data: &b.Data}
	}
	return contentBlock{Type: "thinking", Thinking: &b.Text, Signature: &b.Signature}
}

// Events of the stream (docs/PROTOCOL.md 15.3).

type messageStart struct {
	Type    string         `json:"type"`
	Message *messageObject `json:"message"`
}

type blockStart struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	ContentBlock *contentBlock `json:"content_block"`
}

type blockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta delta  `json:"delta"`
}

type delta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitzero"`
	Thinking    *string `json:"thinking,omitzero"`
	Signature   *string `json:"signature,omitzero"`
	PartialJSON *string `json:"partial_json,omitzero"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageStop struct {
	Type string `json:"type"`
}

type messageDelta struct {
	Type  string      `json:"type"`
	Delta stopDetails `json:"delta"`
	Usage usage       `json:"usage"`
}

type stopDetails struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// Block kinds a stream has open.
const (
	openNone = iota
	openText
	openThinking
	openToolUse
	openRedacted
)

// streamer turns one call's chat events into Anthropic's server-sent events. Blocks are
// numbered as they open; one is open at a time, as Bedrock streams them. Not safe for
// concurrent use.
type streamer struct {
	answer
	started bool
	next    int // the index of the next block
	open    int // the kind of the open block, openNone when none is
	index   int // the open block's index
	// thought: the open thinking block has had a delta.
	thought bool
	// calls is each tool call's block index, by the call's ordinal.
	calls []int
	enc   chatjson.Encoder
	// The events being encoded, reused: passed to the encoder as an interface, an event
	// built per call would be allocated per call.
	blockStart blockStart
	block      contentBlock
	delta      blockDelta
	stopEvent  blockStop
}

var (
	empty      = ""
	emptyInput = jsontext.Value("{}")
)

// appendEvent appends the events of ev; the first call writes message_start first.
func (s *streamer) appendEvent(dst []byte, ev *chat.Event) []byte {
	if !s.started {
		s.started = true
		dst = s.appendData(dst, "message_start", &messageStart{Type: "message_start", Message: &messageObject{
			ID: s.id, Type: "message", Role: "assistant", Model: s.model, Content: []contentBlock{}}})
	}
	switch ev.Kind {
	case chat.EventContent:
		if ev.Text == "" {
			break
		}
		if s.open != openText {
			dst = s.start(dst, openText, contentBlock{Type: "text", Text: &empty})
		}
		dst = s.appendDelta(dst, s.index, delta{Type: "text_delta", Text: &ev.Text})
	case chat.EventReasoning:
		if ev.Text == "" {
			break
		}
		if s.open != openThinking {
			dst = s.start(dst, openThinking, contentBlock{Type: "thinking", Thinking: &empty, Signature: &empty})
		}
		s.thought = true
		dst = s.appendDelta(dst, s.index, delta{Type: "thinking_delta", Thinking: &ev.Text})
	case chat.EventReasoningBlock:
		b := &ev.Block
		if b.Redacted {
			dst = s.start(dst, openRedacted, contentBlock{Type: "redacted_thinking", Data: &b.Data})
			dst = s.stop(dst)
			break
		}
		if s.open != openThinking {
			dst = s.start(dst, openThinking, contentBlock{Type: "thinking", Thinking: &empty, Signature: &empty})
		}
		if !s.thought && b.Text != "" { // a block whose text came whole
			dst = s.appendDelta(dst, s.index, delta{Type: "thinking_delta", Thinking: &b.Text})
		}
		dst = s.appendDelta(dst, s.index, delta{Type: "signature_delta", Signature: &b.Signature})
		dst = s.stop(dst)
	case chat.EventToolCall:
		if ev.ToolCall.ID != "" {
			dst = s.start(dst, openToolUse, contentBlock{Type: "tool_use", ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, Input: emptyInput})
			for len(s.calls) <= ev.Index {
				s.calls = append(s.calls, -1)
			}
			s.calls[ev.Index] = s.index
		}
		if ev.ToolCall.Arguments != "" && ev.Index < len(s.calls) && s.calls[ev.Index] >= 0 {
			dst = s.appendDelta(dst, s.calls[ev.Index], delta{Type: "input_json_delta", PartialJSON: &ev.ToolCall.Arguments})
		}
	case chat.EventToolCallEnd:
		if s.open == openToolUse && ev.Index < len(s.calls) && s.calls[ev.Index] == s.index {
			dst = s.stop(dst)
		}
	case chat.EventDone:
		dst = s.stop(dst)
		reason := stopReasonOf(ev.Finish, ev.StopReason)
		dst = s.appendData(dst, "message_delta", &messageDelta{Type: "message_delta",
			Delta: stopDetails{StopReason: reason, StopSequence: s.stopSequence(reason)}, Usage: usageOf(ev.Usage)})
		dst = s.appendData(dst, "message_stop", &messageStop{Type: "message_stop"})
	}
	return dst
}

// start closes the open block, if any, and opens the next one, of kind.
func (s *streamer) start(dst []byte, kind int, b contentBlock) []byte {
	dst = s.stop(dst)
	s.open, s.index, s.thought = kind, s.next, false
	s.next++
	s.block = b
	s.blockStart = blockStart{Type: "content_block_start", Index: s.index, ContentBlock: &s.block}
	return s.appendData(dst, "content_block_start", &s.blockStart)
}

// stop closes the open block, if any.
func (s *streamer) stop(dst []byte) []byte {
	if s.open == openNone {
		return dst
	}
	s.open = openNone
	s.stopEvent = blockStop{Type: "content_block_stop", Index: s.index}
	return s.appendData(dst, "content_block_stop", &s.stopEvent)
}

func (s *streamer) appendDelta(dst []byte, index int, d delta) []byte {
	s.delta = blockDelta{Type: "content_block_delta", Index: index, Delta: d}
	return s.appendData(dst, "content_block_delta", &s.delta)
}

// appendData appends one event: its name, then its JSON.
func (s *streamer) appendData(dst []byte, event string, v any) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, event...)
	dst = append(dst, "\ndata: "...)
	dst = s.enc.Append(dst, v)
	return append(dst, "\n\n"...)
}

// pingFrame is the event a stream sends while Bedrock is silent.
const pingFrame = "event: ping\ndata: {\"type\": \"ping\"}\n\n"

// errorBody is the error of docs/PROTOCOL.md 15.5, as an answer and as a stream's last
// event.
type errorBody struct {
	Type      string      `json:"type"`
	Error     errorDetail `json:"error"`
	RequestID string      `json:"request_id,omitzero"`
}

type errorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// appendErrorEvent appends a stream's failure: the error event, after which the stream
// ends without message_stop.
func appendErrorEvent(dst []byte, e *errorBody) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = chatjson.Append(dst, e)
	return append(dst, "\n\n"...)
}
