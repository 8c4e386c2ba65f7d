package nirmata

import (
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
)

// The answers of docs/PROTOCOL.md 3.1, 3.2 and 5, in the key order of the contract's
// examples, encoded by chatjson.Append.

type response struct {
	Message      string        `json:"message"`
	ToolCalls    []toolCallOut `json:"tool_calls,omitempty"`
	FinishReason string        `json:"finish_reason"`
	Usage        usage         `json:"usage"`
	Metadata     metadata      `json:"metadata"`
	// Reasoning is the reasoning texts joined with "\n", ReasoningBlocks the blocks to
	// send back; both absent when the answer has none (docs/PROTOCOL.md 11.2).
	Reasoning       string                    `json:"reasoning,omitempty"`
	ReasoningBlocks []chatjson.ReasoningBlock `json:"reasoning_blocks,omitempty"`
}

// toolCallOut is a complete tool call: every key present, arguments "{}" when empty, and
// validation_errors when tool validation found its arguments break the tool's schema
// (docs/PROTOCOL.md 13.2).
type toolCallOut struct {
	ID               string      `json:"id"`
	Type             string      `json:"type"`
	Function         functionOut `json:"function"`
	ValidationErrors []string    `json:"validation_errors,omitempty"`
}

type functionOut struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type usage struct {
	PromptTokens     int32 `json:"prompt_tokens"`
	CompletionTokens int32 `json:"completion_tokens"`
	TotalTokens      int32 `json:"total_tokens"`
	// The prompt tokens read from and written to the prompt cache: both present when
	// either is not zero, else neither (docs/PROTOCOL.md 12.3).
	CachedTokens     *int32 `json:"cached_tokens,omitzero"`
	CacheWriteTokens *int32 `json:"cache_write_tokens,omitzero"`
}

type metadata struct {
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	LatencyMs  int64  `json:"latency_ms"`
	RequestID  string `json:"request_id"`
	// IgnoredParams lists the request fields accepted without effect.
	IgnoredParams []string `json:"ignored_params,omitempty"`
	// ToolBudget is "exhausted" when the request's max_tool_rounds were spent.
	ToolBudget string `json:"tool_budget,omitempty"`
	// Thinking is what happened to extended thinking (docs/PROTOCOL.md 11.4).
	Thinking string `json:"thinking,omitempty"`
}

// AppendResponse appends the unary answer of docs/PROTOCOL.md 3.1 to dst.
func AppendResponse(dst []byte, r *chat.Response) []byte {
	out := response{
		Message:      r.Text,
		FinishReason: string(r.Finish),
		Usage:        usageOf(r.Usage),
		Metadata: metadata{Model: r.Model, StopReason: r.StopReason, LatencyMs: r.LatencyMs, RequestID: r.RequestID,
			IgnoredParams: r.Ignored, ToolBudget: toolBudget(r.BudgetExhausted), Thinking: r.Thinking},
		Reasoning:       chat.ReasoningText(r.Reasoning),
		ReasoningBlocks: chatjson.Blocks(r.Reasoning),
	}
	if len(r.ToolCalls) > 0 {
		out.ToolCalls = make([]toolCallOut, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			out.ToolCalls[i] = complete(tc)
		}
	}
	return appendJSON(dst, &out)
}

func complete(tc chat.ToolCall) toolCallOut {
	args := tc.Arguments
	if args == "" {
		args = "{}"
	}
	return toolCallOut{ID: tc.ID, Type: "function", Function: functionOut{Name: tc.Name, Arguments: args}, ValidationErrors: tc.ValidationErrors}
}

func usageOf(u chat.Usage) usage {
	out := usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 {
		out.CachedTokens, out.CacheWriteTokens = &u.CacheReadTokens, &u.CacheWriteTokens
	}
	return out
}

// Lines of the JSONL delta stream (docs/PROTOCOL.md 3.2).
type (
	contentLine struct {
		Type  string `json:"type"`
		Delta string `json:"delta"`
	}
	// A tool call's first line: id, type and name, and no arguments key.
	toolHeaderLine struct {
		Type  string     `json:"type"`
		Index int        `json:"index"`
		Delta toolHeader `json:"delta"`
	}
	toolHeader struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	// A later line of the call: one fragment of its arguments; with tool validation on,
	// the one line of its complete arguments, with their violations beside the delta
	// (docs/PROTOCOL.md 13.2).
	toolArgsLine struct {
		Type             string   `json:"type"`
		Index            int      `json:"index"`
		Delta            toolArgs `json:"delta"`
		ValidationErrors []string `json:"validation_errors,omitempty"`
	}
	toolArgs struct {
		Function struct {
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	// usage is left out when Bedrock sent none (every count zero).
	doneLine struct {
		Type         string `json:"type"`
		FinishReason string `json:"finish_reason"`
		Usage        usage  `json:"usage,omitzero"`
	}
	// Reasoning lines, sent only when the request opts in (docs/PROTOCOL.md 11.2).
	reasoningBlockLine struct {
		Type  string                  `json:"type"`
		Block chatjson.ReasoningBlock `json:"block"`
	}
	errorLine struct {
		Type  string    `json:"type"`
		Error errorBody `json:"error"`
	}
	errorBody struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
)

// AppendLine appends the JSONL line of one stream event, with its '\n', to dst. An
// EventToolCallEnd has no line of its own: JSONL clients see a call complete when the next
// call or the done line comes. Reasoning events have none either; AppendReasoningLine
// writes them for a request that opted in. A stream writes its lines with a lineWriter.
func AppendLine(dst []byte, ev *chat.Event) []byte {
	var l lineWriter
	return l.line(dst, ev)
}

// AppendReasoningLine is AppendLine with reasoning lines: {"type":"reasoning","delta"}
// per text fragment and {"type":"reasoning_block","block"} when a block ends.
func AppendReasoningLine(dst []byte, ev *chat.Event) []byte {
	var l lineWriter
	return l.reasoningLine(dst, ev)
}

// lineWriter writes the lines of one stream: each kind of line is one value it keeps and
// refills, with its encoder, where a line built per event would escape to the heap
// through the encoder's interface. Not safe for concurrent use.
type lineWriter struct {
	content   contentLine
	header    toolHeaderLine
	args      toolArgsLine
	done      doneLine
	reasoning reasoningBlockLine
	enc       chatjson.Encoder
}

// line is AppendLine.
func (l *lineWriter) line(dst []byte, ev *chat.Event) []byte {
	var v any
	switch ev.Kind {
	case chat.EventContent:
		l.content = contentLine{Type: "content", Delta: ev.Text}
		v = &l.content
	case chat.EventToolCall:
		if ev.ToolCall.ID != "" {
			l.header = toolHeaderLine{Type: "tool_call", Index: ev.Index, Delta: toolHeader{ID: ev.ToolCall.ID, Type: "function"}}
			l.header.Delta.Function.Name = ev.ToolCall.Name
			v = &l.header
		} else {
			l.args = toolArgsLine{Type: "tool_call", Index: ev.Index, ValidationErrors: ev.ToolCall.ValidationErrors}
			l.args.Delta.Function.Arguments = ev.ToolCall.Arguments
			v = &l.args
		}
	case chat.EventDone:
		l.done = doneLine{Type: "done", FinishReason: string(ev.Finish), Usage: usageOf(ev.Usage)}
		v = &l.done
	default:
		return dst
	}
	return append(l.enc.Append(dst, v), '\n')
}

// reasoningLine is AppendReasoningLine.
func (l *lineWriter) reasoningLine(dst []byte, ev *chat.Event) []byte {
	switch ev.Kind {
	case chat.EventReasoning:
		l.content = contentLine{Type: "reasoning", Delta: ev.Text}
		return append(l.enc.Append(dst, &l.content), '\n')
	case chat.EventReasoningBlock:
		l.reasoning = reasoningBlockLine{Type: "reasoning_block", Block: chatjson.Block(&ev.Block)}
		return append(l.enc.Append(dst, &l.reasoning), '\n')
	}
	return l.line(dst, ev)
}

// AppendErrorLine appends the last line of a stream that failed after it started:
// {"type":"error","error":{"code":…,"message":…}} and '\n'.
func AppendErrorLine(dst []byte, code, message string) []byte {
	return append(appendJSON(dst, &errorLine{Type: "error", Error: errorBody{Code: code, Message: message}}), '\n')
}

type errorAnswer struct {
	Error     string `json:"error"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
	// Limit names the key's limit of a refusal (docs/PROTOCOL.md 14.2); absent otherwise.
	Limit string `json:"limit,omitempty"`
}

// AppendError appends the body of a non-2xx answer (docs/PROTOCOL.md 5): {"error":…,
// "code":…,"request_id":…}, every key present, no trailing newline; and "limit" when a
// key's limit refused the request (14.2).
func AppendError(dst []byte, message, code, requestID, limit string) []byte {
	return appendJSON(dst, &errorAnswer{Error: message, Code: code, RequestID: requestID, Limit: limit})
}

func appendJSON(dst []byte, v any) []byte { return chatjson.Append(dst, v) }

func toolBudget(exhausted bool) string {
	if exhausted {
		return "exhausted"
	}
	return ""
}
