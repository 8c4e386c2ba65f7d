package nirmata

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
)

// Line types of the Nirmata chunked stream (docs/PROTOCOL.md 3.3).
const (
	ChunkText      = "Text"
	ChunkToolStart = "ToolStart"
	ChunkError     = "Error"
	// ChunkReasoning carries a fragment of reasoning text; ChunkReasoningBlock a whole
	// block once it ended, as {"reasoning_block":{…}} (docs/PROTOCOL.md 11.2).
	ChunkReasoning      = "Reasoning"
	ChunkReasoningBlock = "ReasoningBlock"
	// ChunkDone is the one extra line a successful stream ends with; deployed clients skip
	// types they do not know. Its data is the JSONL done event,
	// {"type":"done","finish_reason":…,"usage":{…}}, so a client that wants them has the
	// finish reason and usage, and can tell a complete stream from a cut one.
	ChunkDone = "Done"
)

// Chunker writes a stream's events in the Nirmata chunked format (docs/PROTOCOL.md 3.3):
//
//	content        → Text, data = the fragment
//	reasoning      → Reasoning, data = the fragment
//	reasoning block → ReasoningBlock, data = {"reasoning_block":{…}}
//	tool_call      → nothing yet: the call's id, name and arguments are gathered by index
//	tool_call_end  → ToolStart for that call, data = {"tool_call":{id, type, function{name,
//	                 arguments}}} with the complete arguments, if they are valid JSON, and
//	                 validation_errors when tool validation found the call invalid
//	done           → ToolStart for every call not written yet, in index order, then Done
//	AppendError    → Error, data = the message; pending calls are dropped (their arguments
//	                 may be incomplete)
//
// Nothing is written after Done or Error. See the package documentation for why ToolStart
// waits for tool_call_end rather than guessing from the next event.
//
// A call whose arguments are not valid JSON at its end marker is held back until done.
// That is what malformed_tool_use looks like: Bedrock stops the block, then the message
// with that stop reason, and the stream ends in Error, so the client never gets a
// ToolStart it cannot use. The check costs one scan of each call's arguments, which the
// Chunker holds anyway. At done, held calls are written as they are, as JSONL passes them.
//
// Line ids are the idPrefix given to NewChunker, "-", and the line's sequence number from
// 1 ("req-abc-1", "req-abc-2", …; just "1", "2", … when the prefix is empty): unique within
// the stream and, with the request id as prefix, across the log. Clients do not interpret
// them.
//
// Not safe for concurrent use.
type Chunker struct {
	prefix  string
	seq     int
	calls   []pendingCall // in order of their headers, which is index order
	scratch []byte
	ended   bool
	// The line, the done line and their encoder are kept and refilled: see lineWriter.
	chunk chunkLine
	lines lineWriter
}

// pendingCall gathers one tool call until its ToolStart line is written.
type pendingCall struct {
	index    int
	id, name string
	args     []byte
	// errs are the call's validation errors (docs/PROTOCOL.md 13.2), which come with its
	// arguments.
	errs    []string
	written bool
}

// NewChunker returns a Chunker for one stream; idPrefix is typically the request id.
func NewChunker(idPrefix string) *Chunker {
	c := &Chunker{}
	if idPrefix != "" {
		c.prefix = idPrefix + "-"
	}
	return c
}

// Append appends the lines ev produces (none, one, or several at done), each ending in
// '\n', to dst.
func (c *Chunker) Append(dst []byte, ev *chat.Event) []byte {
	if c.ended {
		return dst
	}
	switch ev.Kind {
	case chat.EventContent:
		if ev.Text != "" {
			dst = c.line(dst, ChunkText, ev.Text)
		}
	case chat.EventReasoning:
		if ev.Text != "" {
			dst = c.line(dst, ChunkReasoning, ev.Text)
		}
	case chat.EventReasoningBlock:
		c.scratch = c.lines.enc.Append(c.scratch[:0], &reasoningBlockData{Block: chatjson.Block(&ev.Block)})
		dst = c.line(dst, ChunkReasoningBlock, string(c.scratch))
	case chat.EventToolCall:
		p := &c.calls[c.call(ev.Index)]
		if ev.ToolCall.ID != "" {
			p.id, p.name = ev.ToolCall.ID, ev.ToolCall.Name
		}
		p.args = append(p.args, ev.ToolCall.Arguments...)
		if ev.ToolCall.ValidationErrors != nil {
			p.errs = ev.ToolCall.ValidationErrors
		}
	case chat.EventToolCallEnd:
		for i := range c.calls {
			if p := &c.calls[i]; p.index == ev.Index {
				if jsontext.Value(p.args).IsValid(chatjson.Lenient) {
					dst = c.toolStart(dst, p)
				}
				break
			}
		}
	case chat.EventDone:
		slices.SortStableFunc(c.calls, func(a, b pendingCall) int { return cmp.Compare(a.index, b.index) })
		for i := range c.calls {
			dst = c.toolStart(dst, &c.calls[i])
		}
		c.scratch = bytes.TrimSuffix(c.lines.line(c.scratch[:0], ev), []byte{'\n'})
		dst = c.line(dst, ChunkDone, string(c.scratch))
		c.ended = true
	}
	return dst
}

// AppendError appends the Error line of a stream that failed after it started: message,
// else code, since the deployed client ignores an Error line with empty data and reads on.
func (c *Chunker) AppendError(dst []byte, code, message string) []byte {
	if c.ended {
		return dst
	}
	c.ended = true
	switch {
	case message != "":
	case code != "":
		message = code
	default:
		message = "upstream error"
	}
	return c.line(dst, ChunkError, message)
}

// call returns the position of the call with index, adding it if it is new.
func (c *Chunker) call(index int) int {
	for i := len(c.calls) - 1; i >= 0; i-- {
		if c.calls[i].index == index {
			return i
		}
	}
	c.calls = append(c.calls, pendingCall{index: index})
	return len(c.calls) - 1
}

func (c *Chunker) toolStart(dst []byte, p *pendingCall) []byte {
	if p.written {
		return dst
	}
	p.written = true
	data := toolStartData{ToolCall: complete(chat.ToolCall{ID: p.id, Name: p.name, Arguments: string(p.args), ValidationErrors: p.errs})}
	c.scratch = c.lines.enc.Append(c.scratch[:0], &data)
	return c.line(dst, ChunkToolStart, string(c.scratch))
}

// toolStartData is what a ToolStart line carries in its data string (docs/PROTOCOL.md
// 3.3): {"tool_call":{"id","type","function":{"name","arguments"}}}, with the complete
// arguments ("{}" when there are none).
type toolStartData struct {
	ToolCall toolCallOut `json:"tool_call"`
}

// reasoningBlockData is what a ReasoningBlock line carries in its data string.
type reasoningBlockData struct {
	Block chatjson.ReasoningBlock `json:"reasoning_block"`
}

// chunkLine is one line of the chunked stream: {"id":…,"type":…,"data":…}.
type chunkLine struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data string `json:"data"`
}

func (c *Chunker) line(dst []byte, typ, data string) []byte {
	c.seq++
	c.chunk = chunkLine{ID: c.prefix + strconv.Itoa(c.seq), Type: typ, Data: data}
	return append(c.lines.enc.Append(dst, &c.chunk), '\n')
}
