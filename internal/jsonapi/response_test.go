package jsonapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	v1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/jsonenc"
)

// decodeJSON parses encoder output with encoding/json, proving it is JSON, and returns
// the value with numbers kept as json.Number.
func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	require.True(t, utf8.Valid(b), "output is not UTF-8: %q", b)
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "output is not JSON: %s", b)
	require.False(t, d.More(), "more than one value in %s", b)
	return v
}

func TestAppendChatResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *v1.ChatResponse
		want string
		// parsed is what encoding/json reads back (numbers as json.Number).
		parsed map[string]any
	}{
		{
			name: "protocol example",
			in: &v1.ChatResponse{
				Message: "I'll save the policy for you.",
				ToolCalls: []*v1.ToolCall{{Id: "tooluse_abc", Type: "function",
					Function: &v1.FunctionCall{Name: "save_policy", Arguments: `{"filename":"policy.yaml"}`}}},
				FinishReason: "tool_calls",
				Usage:        &v1.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150},
				Metadata:     &v1.ResponseMetadata{Model: "us.anthropic.m", StopReason: "tool_use", LatencyMs: 812, RequestId: "req-1"},
			},
			want: `{"message":"I'll save the policy for you.","tool_calls":[{"id":"tooluse_abc","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"policy.yaml\"}"}}],"finish_reason":"tool_calls","usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150},"metadata":{"model":"us.anthropic.m","stop_reason":"tool_use","latency_ms":812,"request_id":"req-1"}}`,
			parsed: map[string]any{
				"message": "I'll save the policy for you.",
				"tool_calls": []any{map[string]any{"id": "tooluse_abc", "type": "function",
					"function": map[string]any{"name": "save_policy", "arguments": `{"filename":"policy.yaml"}`}}},
				"finish_reason": "tool_calls",
				"usage":         map[string]any{"prompt_tokens": json.Number("120"), "completion_tokens": json.Number("30"), "total_tokens": json.Number("150")},
				"metadata":      map[string]any{"model": "us.anthropic.m", "stop_reason": "tool_use", "latency_ms": json.Number("812"), "request_id": "req-1"},
			},
		},
		{
			name:   "empty",
			in:     &v1.ChatResponse{},
			want:   `{"message":"","finish_reason":""}`,
			parsed: map[string]any{"message": "", "finish_reason": ""},
		},
		{
			name:   "nil",
			in:     nil,
			want:   `{"message":"","finish_reason":""}`,
			parsed: map[string]any{"message": "", "finish_reason": ""},
		},
		{
			name: "tool calls with defaults, zero usage and metadata",
			in: &v1.ChatResponse{
				ToolCalls: []*v1.ToolCall{
					{Id: "a", Function: &v1.FunctionCall{Name: "f"}},
					{Id: "b"},
					nil,
				},
				FinishReason: "tool_calls",
				Usage:        &v1.Usage{},
				Metadata:     &v1.ResponseMetadata{},
			},
			want: `{"message":"","tool_calls":[` +
				`{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},` +
				`{"id":"b","type":"function","function":{"name":"","arguments":"{}"}},` +
				`{"id":"","type":"function","function":{"name":"","arguments":"{}"}}],` +
				`"finish_reason":"tool_calls","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},` +
				`"metadata":{"model":"","stop_reason":"","latency_ms":0,"request_id":""}}`,
			parsed: map[string]any{
				"message": "",
				"tool_calls": []any{
					map[string]any{"id": "a", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}},
					map[string]any{"id": "b", "type": "function", "function": map[string]any{"name": "", "arguments": "{}"}},
					map[string]any{"id": "", "type": "function", "function": map[string]any{"name": "", "arguments": "{}"}},
				},
				"finish_reason": "tool_calls",
				"usage":         map[string]any{"prompt_tokens": json.Number("0"), "completion_tokens": json.Number("0"), "total_tokens": json.Number("0")},
				"metadata":      map[string]any{"model": "", "stop_reason": "", "latency_ms": json.Number("0"), "request_id": ""},
			},
		},
		{
			name: "text stays literal",
			in:   &v1.ChatResponse{Message: "日本語 😀 <&>\n\"q\"\\", FinishReason: "stop", Usage: &v1.Usage{PromptTokens: 2147483647}},
			want: `{"message":"日本語 😀 <&>\n\"q\"\\","finish_reason":"stop","usage":{"prompt_tokens":2147483647,"completion_tokens":0,"total_tokens":0}}`,
			parsed: map[string]any{"message": "日本語 😀 <&>\n\"q\"\\", "finish_reason": "stop",
				"usage": map[string]any{"prompt_tokens": json.Number("2147483647"), "completion_tokens": json.Number("0"), "total_tokens": json.Number("0")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := AppendChatResponse(nil, tt.in)
			require.Equal(t, tt.want, string(got))
			require.Equal(t, tt.parsed, decodeJSON(t, got))
		})
	}
}

func TestAppendChatResponseAppends(t *testing.T) {
	t.Parallel()
	prefix := []byte("prefix:")
	got := AppendChatResponse(prefix, &v1.ChatResponse{Message: "x"})
	require.Equal(t, `prefix:{"message":"x","finish_reason":""}`, string(got))
}

func TestAppendStreamEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     *v1.ChatStreamEvent
		want   string
		parsed map[string]any
	}{
		{
			name:   "content",
			in:     &v1.ChatStreamEvent{Type: "content", Delta: "Analyzing your request..."},
			want:   `{"type":"content","delta":"Analyzing your request..."}`,
			parsed: map[string]any{"type": "content", "delta": "Analyzing your request..."},
		},
		{
			name:   "empty content",
			in:     &v1.ChatStreamEvent{Type: "content"},
			want:   `{"type":"content","delta":""}`,
			parsed: map[string]any{"type": "content", "delta": ""},
		},
		{
			name:   "content stays literal",
			in:     &v1.ChatStreamEvent{Type: "content", Delta: "日本語 😀 <&>"},
			want:   `{"type":"content","delta":"日本語 😀 <&>"}`,
			parsed: map[string]any{"type": "content", "delta": "日本語 😀 <&>"},
		},
		{
			name: "tool_call header",
			in: &v1.ChatStreamEvent{Type: "tool_call", Index: 0,
				ToolCall: &v1.ToolCall{Id: "tooluse_abc", Type: "function", Function: &v1.FunctionCall{Name: "save_policy"}}},
			want: `{"type":"tool_call","index":0,"delta":{"id":"tooluse_abc","type":"function","function":{"name":"save_policy"}}}`,
			parsed: map[string]any{"type": "tool_call", "index": json.Number("0"), "delta": map[string]any{
				"id": "tooluse_abc", "type": "function", "function": map[string]any{"name": "save_policy"}}},
		},
		{
			name: "tool_call header type defaults to function",
			in: &v1.ChatStreamEvent{Type: "tool_call", Index: 2,
				ToolCall: &v1.ToolCall{Id: "t", Function: &v1.FunctionCall{Name: "f"}}},
			want: `{"type":"tool_call","index":2,"delta":{"id":"t","type":"function","function":{"name":"f"}}}`,
			parsed: map[string]any{"type": "tool_call", "index": json.Number("2"), "delta": map[string]any{
				"id": "t", "type": "function", "function": map[string]any{"name": "f"}}},
		},
		{
			name: "tool_call header carrying arguments keeps them",
			in: &v1.ChatStreamEvent{Type: "tool_call", Index: 1,
				ToolCall: &v1.ToolCall{Id: "t", Type: "function", Function: &v1.FunctionCall{Name: "f", Arguments: "{}"}}},
			want: `{"type":"tool_call","index":1,"delta":{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}}`,
			parsed: map[string]any{"type": "tool_call", "index": json.Number("1"), "delta": map[string]any{
				"id": "t", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}},
		},
		{
			name: "tool_call fragment",
			in: &v1.ChatStreamEvent{Type: "tool_call", Index: 0,
				ToolCall: &v1.ToolCall{Function: &v1.FunctionCall{Arguments: `{"filename":`}}},
			want: `{"type":"tool_call","index":0,"delta":{"function":{"arguments":"{\"filename\":"}}}`,
			parsed: map[string]any{"type": "tool_call", "index": json.Number("0"), "delta": map[string]any{
				"function": map[string]any{"arguments": `{"filename":`}}},
		},
		{
			name: "tool_call empty fragment keeps arguments key",
			in:   &v1.ChatStreamEvent{Type: "tool_call", Index: 3, ToolCall: &v1.ToolCall{}},
			want: `{"type":"tool_call","index":3,"delta":{"function":{"arguments":""}}}`,
			parsed: map[string]any{"type": "tool_call", "index": json.Number("3"), "delta": map[string]any{
				"function": map[string]any{"arguments": ""}}},
		},
		{
			name: "tool_call fragment with type and name",
			in: &v1.ChatStreamEvent{Type: "tool_call", Index: 0,
				ToolCall: &v1.ToolCall{Type: "function", Function: &v1.FunctionCall{Name: "f", Arguments: "}"}}},
			want: `{"type":"tool_call","index":0,"delta":{"type":"function","function":{"name":"f","arguments":"}"}}}`,
			parsed: map[string]any{"type": "tool_call", "index": json.Number("0"), "delta": map[string]any{
				"type": "function", "function": map[string]any{"name": "f", "arguments": "}"}}},
		},
		{
			name: "done",
			in: &v1.ChatStreamEvent{Type: "done", FinishReason: "tool_calls",
				Usage: &v1.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}},
			want: `{"type":"done","finish_reason":"tool_calls","usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`,
			parsed: map[string]any{"type": "done", "finish_reason": "tool_calls", "usage": map[string]any{
				"prompt_tokens": json.Number("120"), "completion_tokens": json.Number("30"), "total_tokens": json.Number("150")}},
		},
		{
			name:   "done without usage",
			in:     &v1.ChatStreamEvent{Type: "done", FinishReason: "stop"},
			want:   `{"type":"done","finish_reason":"stop"}`,
			parsed: map[string]any{"type": "done", "finish_reason": "stop"},
		},
		{
			name: "error",
			in:   &v1.ChatStreamEvent{Type: "error", Error: &v1.StreamError{Code: "unavailable", Message: "Bedrock stream ended without messageStop"}},
			want: `{"type":"error","error":{"code":"unavailable","message":"Bedrock stream ended without messageStop"}}`,
			parsed: map[string]any{"type": "error", "error": map[string]any{
				"code": "unavailable", "message": "Bedrock stream ended without messageStop"}},
		},
		{
			name:   "error without detail",
			in:     &v1.ChatStreamEvent{Type: "error"},
			want:   `{"type":"error","error":{"code":"","message":""}}`,
			parsed: map[string]any{"type": "error", "error": map[string]any{"code": "", "message": ""}},
		},
		{
			name: "unknown type writes what is set",
			in:   &v1.ChatStreamEvent{Type: "usage", Usage: &v1.Usage{TotalTokens: 3}},
			want: `{"type":"usage","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":3}}`,
			parsed: map[string]any{"type": "usage", "usage": map[string]any{
				"prompt_tokens": json.Number("0"), "completion_tokens": json.Number("0"), "total_tokens": json.Number("3")}},
		},
		{
			name:   "nil",
			in:     nil,
			want:   `{"type":""}`,
			parsed: map[string]any{"type": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := AppendStreamEvent(nil, tt.in)
			require.Equal(t, tt.want+"\n", string(got))
			require.Equal(t, 1, bytes.Count(got, []byte("\n")), "one line")
			require.Equal(t, tt.parsed, decodeJSON(t, got))
		})
	}
}

// TestStreamArgumentsConcatenate checks the contract's promise for 3.2: the arguments
// fragments of an index concatenate to the complete JSON, and the header has none.
func TestStreamArgumentsConcatenate(t *testing.T) {
	t.Parallel()
	events := []*v1.ChatStreamEvent{
		{Type: "tool_call", Index: 0, ToolCall: &v1.ToolCall{Id: "t0", Type: "function", Function: &v1.FunctionCall{Name: "save_policy"}}},
		{Type: "tool_call", Index: 0, ToolCall: &v1.ToolCall{Function: &v1.FunctionCall{Arguments: `{"filename":`}}},
		{Type: "tool_call", Index: 0, ToolCall: &v1.ToolCall{Function: &v1.FunctionCall{Arguments: `"policy.yaml"}`}}},
		{Type: "done", FinishReason: "tool_calls"},
	}
	var out []byte
	for _, e := range events {
		out = AppendStreamEvent(out, e)
	}
	var args strings.Builder
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, 4)
	for i, line := range lines[:3] {
		var ev struct {
			Delta struct {
				ID       string `json:"id"`
				Function struct {
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"delta"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ev))
		if i == 0 {
			require.Equal(t, "t0", ev.Delta.ID)
			require.Nil(t, ev.Delta.Function.Arguments, "header has no arguments key")
			continue
		}
		require.NotNil(t, ev.Delta.Function.Arguments)
		args.WriteString(*ev.Delta.Function.Arguments)
	}
	require.JSONEq(t, `{"filename":"policy.yaml"}`, args.String())
}

func TestAppendChunkedEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, id, typ, data, want string
	}{
		{"text", "evt_1", "Text", "Hello <b>&</b> 日本語 😀", `{"id":"evt_1","type":"Text","data":"Hello <b>&</b> 日本語 😀"}`},
		{"empty", "", "", "", `{"id":"","type":"","data":""}`},
		{"error", "evt_9", "Error", "upstream \"throttled\"\n", `{"id":"evt_9","type":"Error","data":"upstream \"throttled\"\n"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := AppendChunkedEvent(nil, tt.id, tt.typ, tt.data)
			require.Equal(t, tt.want+"\n", string(got))
			require.Equal(t, map[string]any{"id": tt.id, "type": tt.typ, "data": tt.data}, decodeJSON(t, got))
		})
	}
}

func TestAppendToolStartData(t *testing.T) {
	t.Parallel()
	tc := &v1.ToolCall{Id: "tooluse_abc", Type: "function",
		Function: &v1.FunctionCall{Name: "save_policy", Arguments: `{"filename":"policy.yaml","n":12345678901234567890}`}}
	data := AppendToolStartData(nil, tc)
	require.Equal(t, `{"tool_call":{"id":"tooluse_abc","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"policy.yaml\",\"n\":12345678901234567890}"}}}`, string(data))
	require.Equal(t, map[string]any{"tool_call": map[string]any{"id": "tooluse_abc", "type": "function",
		"function": map[string]any{"name": "save_policy", "arguments": `{"filename":"policy.yaml","n":12345678901234567890}`}}},
		decodeJSON(t, data))

	// The data travels as a string inside a chunked event, and a gollm client reads it
	// back out in two steps.
	line := AppendChunkedEvent(nil, "evt_2", "ToolStart", string(data))
	var ev struct{ ID, Type, Data string }
	require.NoError(t, json.Unmarshal(line, &ev))
	require.Equal(t, string(data), ev.Data)

	require.Equal(t, `{"tool_call":{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}}`,
		string(AppendToolStartData(nil, &v1.ToolCall{Id: "t", Function: &v1.FunctionCall{Name: "f"}})))
}

func TestAppendError(t *testing.T) {
	t.Parallel()
	got := AppendError(nil, `messages[2].role: "robot" is not a role <see docs> & retry`, "invalid_argument", "req-42")
	require.Equal(t, `{"error":"messages[2].role: \"robot\" is not a role <see docs> & retry","code":"invalid_argument","request_id":"req-42"}`, string(got))
	require.Equal(t, map[string]any{"error": `messages[2].role: "robot" is not a role <see docs> & retry`,
		"code": "invalid_argument", "request_id": "req-42"}, decodeJSON(t, got))
	require.Equal(t, `{"error":"","code":"","request_id":""}`, string(AppendError(nil, "", "", "")))
}

func TestAppendCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     *v1.Capabilities
		want   string
		parsed map[string]any
	}{
		{
			name: "protocol example",
			in: &v1.Capabilities{
				ToolsSupported: true, ToolTypes: []string{"function"}, StreamingTools: true, MaxTools: 128,
				StreamingFormats: []string{"jsonl", "chunked"}, ToolChoice: []string{"auto", "none", "required", "function"},
				DefaultModel: "us.anthropic.claude-sonnet-4-20250514-v1:0",
				Models: []*v1.ModelCapabilities{
					{Id: "us.anthropic.claude-sonnet-4-20250514-v1:0", Tools: true, StreamingTools: true, ToolChoice: []string{"auto", "any", "tool"}},
					{Id: "meta.llama3-70b", Tools: true},
				},
			},
			want: `{"tools_supported":true,"tool_types":["function"],"streaming_tools":true,"max_tools":128,` +
				`"streaming_formats":["jsonl","chunked"],"tool_choice":["auto","none","required","function"],` +
				`"default_model":"us.anthropic.claude-sonnet-4-20250514-v1:0","models":[` +
				`{"id":"us.anthropic.claude-sonnet-4-20250514-v1:0","tools":true,"streaming_tools":true,"tool_choice":["auto","any","tool"]},` +
				`{"id":"meta.llama3-70b","tools":true,"streaming_tools":false,"tool_choice":[]}]}`,
			parsed: map[string]any{
				"tools_supported": true, "tool_types": []any{"function"}, "streaming_tools": true, "max_tools": json.Number("128"),
				"streaming_formats": []any{"jsonl", "chunked"}, "tool_choice": []any{"auto", "none", "required", "function"},
				"default_model": "us.anthropic.claude-sonnet-4-20250514-v1:0",
				"models": []any{
					map[string]any{"id": "us.anthropic.claude-sonnet-4-20250514-v1:0", "tools": true, "streaming_tools": true, "tool_choice": []any{"auto", "any", "tool"}},
					map[string]any{"id": "meta.llama3-70b", "tools": true, "streaming_tools": false, "tool_choice": []any{}},
				},
			},
		},
		{
			name: "empty",
			in:   &v1.Capabilities{},
			want: `{"tools_supported":false,"tool_types":[],"streaming_tools":false,"max_tools":0,"streaming_formats":[],"tool_choice":[],"default_model":"","models":[]}`,
			parsed: map[string]any{
				"tools_supported": false, "tool_types": []any{}, "streaming_tools": false, "max_tools": json.Number("0"),
				"streaming_formats": []any{}, "tool_choice": []any{}, "default_model": "", "models": []any{},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := AppendCapabilities(nil, tt.in)
			require.Equal(t, tt.want, string(got))
			require.Equal(t, tt.parsed, decodeJSON(t, got))
		})
	}
}

// TestRoundTripThroughDecoder feeds encoder output for tool calls back through the
// request decoder, as a client that echoes the assistant turn would.
func TestRoundTripThroughDecoder(t *testing.T) {
	t.Parallel()
	resp := &v1.ChatResponse{
		Message: "日本語 😀 <&>",
		ToolCalls: []*v1.ToolCall{{Id: "tooluse_1", Type: "function",
			Function: &v1.FunctionCall{Name: "save_policy", Arguments: `{"n":12345678901234567890,"s":"a\u2028b"}`}}},
		FinishReason: "tool_calls",
	}
	out := AppendChatResponse(nil, resp)
	// Re-wrap the response as an assistant message in a new request.
	body := []byte(`{"messages":[{"role":"assistant","content":` +
		string(jsonenc.AppendString(nil, resp.GetMessage())) + `,"tool_calls":` +
		string(out[bytes.Index(out, []byte(`[`)):bytes.Index(out, []byte(`,"finish_reason"`))]) + `}]}`)
	req, err := DecodeChatRequest(body)
	require.NoError(t, err)
	m := req.GetMessages()[0]
	require.Equal(t, resp.GetMessage(), m.GetContent())
	require.Equal(t, resp.GetToolCalls()[0].GetId(), m.GetToolCalls()[0].GetId())
	require.Equal(t, resp.GetToolCalls()[0].GetFunction().GetArguments(), m.GetToolCalls()[0].GetFunction().GetArguments())
}
