package jsonapi

import (
	"strconv"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/jsonenc"
)

// Stream event types (docs/PROTOCOL.md 3.2).
const (
	eventContent  = "content"
	eventToolCall = "tool_call"
	eventDone     = "done"
	eventError    = "error"
)

// AppendChatResponse appends the unary response of docs/PROTOCOL.md 3.1. "message" and
// "finish_reason" are always present; "tool_calls" is left out when there are none,
// "usage" and "metadata" when they are nil. A nil r encodes as an empty response.
func AppendChatResponse(dst []byte, r *llmgatewayv1.ChatResponse) []byte {
	dst = append(dst, `{"message":`...)
	dst = jsonenc.AppendString(dst, r.GetMessage())
	if tcs := r.GetToolCalls(); len(tcs) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, tc := range tcs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendToolCall(dst, tc)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"finish_reason":`...)
	dst = jsonenc.AppendString(dst, r.GetFinishReason())
	if u := r.GetUsage(); u != nil {
		dst = append(dst, `,"usage":`...)
		dst = appendUsage(dst, u)
	}
	if m := r.GetMetadata(); m != nil {
		dst = append(dst, `,"metadata":{"model":`...)
		dst = jsonenc.AppendString(dst, m.GetModel())
		dst = append(dst, `,"stop_reason":`...)
		dst = jsonenc.AppendString(dst, m.GetStopReason())
		dst = append(dst, `,"latency_ms":`...)
		dst = strconv.AppendInt(dst, int64(m.GetLatencyMs()), 10)
		dst = append(dst, `,"request_id":`...)
		dst = jsonenc.AppendString(dst, m.GetRequestId())
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendToolCall appends a complete tool call: {"id","type","function":{"name","arguments"}},
// every key present, type "function" and arguments "{}" when unset.
func appendToolCall(dst []byte, tc *llmgatewayv1.ToolCall) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonenc.AppendString(dst, tc.GetId())
	dst = append(dst, `,"type":`...)
	dst = jsonenc.AppendString(dst, orDefault(tc.GetType(), "function"))
	dst = append(dst, `,"function":{"name":`...)
	dst = jsonenc.AppendString(dst, tc.GetFunction().GetName())
	dst = append(dst, `,"arguments":`...)
	dst = jsonenc.AppendString(dst, orDefault(tc.GetFunction().GetArguments(), "{}"))
	return append(dst, `}}`...)
}

func appendUsage(dst []byte, u *llmgatewayv1.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.GetPromptTokens()), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.GetCompletionTokens()), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.GetTotalTokens()), 10)
	return append(dst, '}')
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// AppendStreamEvent appends one line of the JSONL delta stream of docs/PROTOCOL.md 3.2,
// including its trailing '\n':
//
//	{"type":"content","delta":"…"}
//	{"type":"tool_call","index":N,"delta":{…}}
//	{"type":"done","finish_reason":"…","usage":{…}}
//	{"type":"error","error":{"code":"…","message":"…"}}
//
// A tool_call delta is a header when its ToolCall has an id: then it carries id, type
// ("function" when unset) and function.name, and function.arguments only when that is
// non-empty (the contract's header line has no arguments key; a producer that puts
// arguments in a header still gets them through rather than silently lost). Without an
// id it is a fragment: function.arguments is always present (possibly ""), and type and
// function.name appear only when set. So concatenating the arguments of an index always
// yields what the producer streamed.
//
// done leaves out usage when it is nil. An event of any other type is written as its type
// plus whichever of delta, finish_reason, usage and error are set.
func AppendStreamEvent(dst []byte, e *llmgatewayv1.ChatStreamEvent) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonenc.AppendString(dst, e.GetType())
	switch e.GetType() {
	case eventContent:
		dst = append(dst, `,"delta":`...)
		dst = jsonenc.AppendString(dst, e.GetDelta())
	case eventToolCall:
		dst = append(dst, `,"index":`...)
		dst = strconv.AppendInt(dst, int64(e.GetIndex()), 10)
		dst = append(dst, `,"delta":`...)
		dst = appendToolCallDelta(dst, e.GetToolCall())
	case eventDone:
		dst = append(dst, `,"finish_reason":`...)
		dst = jsonenc.AppendString(dst, e.GetFinishReason())
		if u := e.GetUsage(); u != nil {
			dst = append(dst, `,"usage":`...)
			dst = appendUsage(dst, u)
		}
	case eventError:
		dst = append(dst, `,"error":`...)
		dst = appendStreamError(dst, e.GetError())
	default:
		if e.GetDelta() != "" {
			dst = append(dst, `,"delta":`...)
			dst = jsonenc.AppendString(dst, e.GetDelta())
		}
		if e.GetFinishReason() != "" {
			dst = append(dst, `,"finish_reason":`...)
			dst = jsonenc.AppendString(dst, e.GetFinishReason())
		}
		if u := e.GetUsage(); u != nil {
			dst = append(dst, `,"usage":`...)
			dst = appendUsage(dst, u)
		}
		if se := e.GetError(); se != nil {
			dst = append(dst, `,"error":`...)
			dst = appendStreamError(dst, se)
		}
	}
	return append(dst, "}\n"...)
}

func appendToolCallDelta(dst []byte, tc *llmgatewayv1.ToolCall) []byte {
	fn := tc.GetFunction()
	if id := tc.GetId(); id != "" {
		dst = append(dst, `{"id":`...)
		dst = jsonenc.AppendString(dst, id)
		dst = append(dst, `,"type":`...)
		dst = jsonenc.AppendString(dst, orDefault(tc.GetType(), "function"))
		dst = append(dst, `,"function":{"name":`...)
		dst = jsonenc.AppendString(dst, fn.GetName())
		if args := fn.GetArguments(); args != "" {
			dst = append(dst, `,"arguments":`...)
			dst = jsonenc.AppendString(dst, args)
		}
		return append(dst, `}}`...)
	}
	dst = append(dst, '{')
	if t := tc.GetType(); t != "" {
		dst = append(dst, `"type":`...)
		dst = jsonenc.AppendString(dst, t)
		dst = append(dst, ',')
	}
	dst = append(dst, `"function":{`...)
	if name := fn.GetName(); name != "" {
		dst = append(dst, `"name":`...)
		dst = jsonenc.AppendString(dst, name)
		dst = append(dst, ',')
	}
	dst = append(dst, `"arguments":`...)
	dst = jsonenc.AppendString(dst, fn.GetArguments())
	return append(dst, `}}`...)
}

func appendStreamError(dst []byte, se *llmgatewayv1.StreamError) []byte {
	dst = append(dst, `{"code":`...)
	dst = jsonenc.AppendString(dst, se.GetCode())
	dst = append(dst, `,"message":`...)
	dst = jsonenc.AppendString(dst, se.GetMessage())
	return append(dst, '}')
}

// AppendChunkedEvent appends one line of the Nirmata chunked stream of docs/PROTOCOL.md 3.3,
// {"id":…,"type":…,"data":…}, including its trailing '\n'.
func AppendChunkedEvent(dst []byte, id, typ, data string) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonenc.AppendString(dst, id)
	dst = append(dst, `,"type":`...)
	dst = jsonenc.AppendString(dst, typ)
	dst = append(dst, `,"data":`...)
	dst = jsonenc.AppendString(dst, data)
	return append(dst, "}\n"...)
}

// AppendToolStartData appends the JSON text that a chunked ToolStart event carries in its
// data string (docs/PROTOCOL.md 3.3): {"tool_call":{"id","type","function":{"name","arguments"}}},
// with the complete arguments ("{}" when there are none).
func AppendToolStartData(dst []byte, tc *llmgatewayv1.ToolCall) []byte {
	dst = append(dst, `{"tool_call":`...)
	dst = appendToolCall(dst, tc)
	return append(dst, '}')
}

// AppendError appends the body of a non-2xx REST answer (docs/PROTOCOL.md 5):
// {"error":…,"code":…,"request_id":…}, every key present, no trailing newline.
func AppendError(dst []byte, message, code, requestID string) []byte {
	dst = append(dst, `{"error":`...)
	dst = jsonenc.AppendString(dst, message)
	dst = append(dst, `,"code":`...)
	dst = jsonenc.AppendString(dst, code)
	dst = append(dst, `,"request_id":`...)
	dst = jsonenc.AppendString(dst, requestID)
	return append(dst, '}')
}

// AppendCapabilities appends the capabilities answer of docs/PROTOCOL.md 4. Every key is
// present; lists are [] rather than null when empty.
func AppendCapabilities(dst []byte, c *llmgatewayv1.Capabilities) []byte {
	dst = append(dst, `{"tools_supported":`...)
	dst = strconv.AppendBool(dst, c.GetToolsSupported())
	dst = append(dst, `,"tool_types":`...)
	dst = appendStrings(dst, c.GetToolTypes())
	dst = append(dst, `,"streaming_tools":`...)
	dst = strconv.AppendBool(dst, c.GetStreamingTools())
	dst = append(dst, `,"max_tools":`...)
	dst = strconv.AppendInt(dst, int64(c.GetMaxTools()), 10)
	dst = append(dst, `,"streaming_formats":`...)
	dst = appendStrings(dst, c.GetStreamingFormats())
	dst = append(dst, `,"tool_choice":`...)
	dst = appendStrings(dst, c.GetToolChoice())
	dst = append(dst, `,"default_model":`...)
	dst = jsonenc.AppendString(dst, c.GetDefaultModel())
	dst = append(dst, `,"models":[`...)
	for i, m := range c.GetModels() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = jsonenc.AppendString(dst, m.GetId())
		dst = append(dst, `,"tools":`...)
		dst = strconv.AppendBool(dst, m.GetTools())
		dst = append(dst, `,"streaming_tools":`...)
		dst = strconv.AppendBool(dst, m.GetStreamingTools())
		dst = append(dst, `,"tool_choice":`...)
		dst = appendStrings(dst, m.GetToolChoice())
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, s)
	}
	return append(dst, ']')
}
