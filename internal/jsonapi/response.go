package jsonapi

import (
	"strconv"
	"unicode/utf8"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// Stream event types (PROTOCOL.md 3.2).
const (
	eventContent  = "content"
	eventToolCall = "tool_call"
	eventDone     = "done"
	eventError    = "error"
)

// AppendChatResponse appends the unary response of PROTOCOL.md 3.1. "message" and
// "finish_reason" are always present; "tool_calls" is left out when there are none,
// "usage" and "metadata" when they are nil. A nil r encodes as an empty response.
func AppendChatResponse(dst []byte, r *llmgatewayv1.ChatResponse) []byte {
	dst = append(dst, `{"message":`...)
	dst = AppendString(dst, r.GetMessage())
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
	dst = AppendString(dst, r.GetFinishReason())
	if u := r.GetUsage(); u != nil {
		dst = append(dst, `,"usage":`...)
		dst = appendUsage(dst, u)
	}
	if m := r.GetMetadata(); m != nil {
		dst = append(dst, `,"metadata":{"model":`...)
		dst = AppendString(dst, m.GetModel())
		dst = append(dst, `,"stop_reason":`...)
		dst = AppendString(dst, m.GetStopReason())
		dst = append(dst, `,"latency_ms":`...)
		dst = strconv.AppendInt(dst, int64(m.GetLatencyMs()), 10)
		dst = append(dst, `,"request_id":`...)
		dst = AppendString(dst, m.GetRequestId())
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendToolCall appends a complete tool call: {"id","type","function":{"name","arguments"}},
// every key present, type "function" and arguments "{}" when unset.
func appendToolCall(dst []byte, tc *llmgatewayv1.ToolCall) []byte {
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, tc.GetId())
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, orDefault(tc.GetType(), "function"))
	dst = append(dst, `,"function":{"name":`...)
	dst = AppendString(dst, tc.GetFunction().GetName())
	dst = append(dst, `,"arguments":`...)
	dst = AppendString(dst, orDefault(tc.GetFunction().GetArguments(), "{}"))
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

// AppendStreamEvent appends one line of the JSONL delta stream of PROTOCOL.md 3.2,
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
	dst = AppendString(dst, e.GetType())
	switch e.GetType() {
	case eventContent:
		dst = append(dst, `,"delta":`...)
		dst = AppendString(dst, e.GetDelta())
	case eventToolCall:
		dst = append(dst, `,"index":`...)
		dst = strconv.AppendInt(dst, int64(e.GetIndex()), 10)
		dst = append(dst, `,"delta":`...)
		dst = appendToolCallDelta(dst, e.GetToolCall())
	case eventDone:
		dst = append(dst, `,"finish_reason":`...)
		dst = AppendString(dst, e.GetFinishReason())
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
			dst = AppendString(dst, e.GetDelta())
		}
		if e.GetFinishReason() != "" {
			dst = append(dst, `,"finish_reason":`...)
			dst = AppendString(dst, e.GetFinishReason())
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
		dst = AppendString(dst, id)
		dst = append(dst, `,"type":`...)
		dst = AppendString(dst, orDefault(tc.GetType(), "function"))
		dst = append(dst, `,"function":{"name":`...)
		dst = AppendString(dst, fn.GetName())
		if args := fn.GetArguments(); args != "" {
			dst = append(dst, `,"arguments":`...)
			dst = AppendString(dst, args)
		}
		return append(dst, `}}`...)
	}
	dst = append(dst, '{')
	if t := tc.GetType(); t != "" {
		dst = append(dst, `"type":`...)
		dst = AppendString(dst, t)
		dst = append(dst, ',')
	}
	dst = append(dst, `"function":{`...)
	if name := fn.GetName(); name != "" {
		dst = append(dst, `"name":`...)
		dst = AppendString(dst, name)
		dst = append(dst, ',')
	}
	dst = append(dst, `"arguments":`...)
	dst = AppendString(dst, fn.GetArguments())
	return append(dst, `}}`...)
}

func appendStreamError(dst []byte, se *llmgatewayv1.StreamError) []byte {
	dst = append(dst, `{"code":`...)
	dst = AppendString(dst, se.GetCode())
	dst = append(dst, `,"message":`...)
	dst = AppendString(dst, se.GetMessage())
	return append(dst, '}')
}

// AppendChunkedEvent appends one line of the Nirmata chunked stream of PROTOCOL.md 3.3,
// {"id":…,"type":…,"data":…}, including its trailing '\n'.
func AppendChunkedEvent(dst []byte, id, typ, data string) []byte {
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, id)
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, typ)
	dst = append(dst, `,"data":`...)
	dst = AppendString(dst, data)
	return append(dst, "}\n"...)
}

// AppendToolStartData appends the JSON text that a chunked ToolStart event carries in its
// data string (PROTOCOL.md 3.3): {"tool_call":{"id","type","function":{"name","arguments"}}},
// with the complete arguments ("{}" when there are none).
func AppendToolStartData(dst []byte, tc *llmgatewayv1.ToolCall) []byte {
	dst = append(dst, `{"tool_call":`...)
	dst = appendToolCall(dst, tc)
	return append(dst, '}')
}

// AppendError appends the body of a non-2xx REST answer (PROTOCOL.md 5):
// {"error":…,"code":…,"request_id":…}, every key present, no trailing newline.
func AppendError(dst []byte, message, code, requestID string) []byte {
	dst = append(dst, `{"error":`...)
	dst = AppendString(dst, message)
	dst = append(dst, `,"code":`...)
	dst = AppendString(dst, code)
	dst = append(dst, `,"request_id":`...)
	dst = AppendString(dst, requestID)
	return append(dst, '}')
}

// AppendCapabilities appends the capabilities answer of PROTOCOL.md 4. Every key is
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
	dst = AppendString(dst, c.GetDefaultModel())
	dst = append(dst, `,"models":[`...)
	for i, m := range c.GetModels() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = AppendString(dst, m.GetId())
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
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string and returns the extended buffer. It is
// the gateway's one JSON string escaper: the REST encoders here and the translator's
// schema writer use it. Unlike encoding/json it does not escape <, > and & (these bodies
// are never embedded in HTML, and Bedrock must see the client's text as written) and keeps
// non-ASCII text as raw UTF-8; it escapes '"', '\\', control characters (\b \f \n \r \t,
// else \u00XX) and U+2028 / U+2029, which JSON allows raw but JavaScript string literals
// before ES2019 do not. Bytes that are not valid UTF-8 become U+FFFD, so the output is
// always valid JSON. It allocates only when dst must grow.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
