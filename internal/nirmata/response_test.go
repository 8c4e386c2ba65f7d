package nirmata

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// The contract's bytes (docs/PROTOCOL.md 3.1, 3.2 and 5): deployed clients parse them, so
// each case pins the exact output.

func TestAppendResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *chat.Response
		want string
	}{
		{
			name: "protocol example",
			in: &chat.Response{
				Text:       "I'll save the policy for you.",
				ToolCalls:  []chat.ToolCall{{ID: "tooluse_abc", Type: "function", Name: "save_policy", Arguments: `{"filename":"policy.yaml"}`}},
				Finish:     chat.FinishToolCalls,
				Usage:      chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150},
				Model:      "us.anthropic.m",
				StopReason: "tool_use",
				LatencyMs:  812,
				RequestID:  "req-1",
			},
			want: `{"message":"I'll save the policy for you.","tool_calls":[{"id":"tooluse_abc","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"policy.yaml\"}"}}],"finish_reason":"tool_calls","usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150},"metadata":{"model":"us.anthropic.m","stop_reason":"tool_use","latency_ms":812,"request_id":"req-1"}}`,
		},
		{
			name: "tool calls with defaults",
			in:   &chat.Response{ToolCalls: []chat.ToolCall{{ID: "a", Name: "f"}, {ID: "b"}}, Finish: chat.FinishToolCalls},
			want: `{"message":"","tool_calls":[` +
				`{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},` +
				`{"id":"b","type":"function","function":{"name":"","arguments":"{}"}}],` +
				`"finish_reason":"tool_calls","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},` +
				`"metadata":{"model":"","stop_reason":"","latency_ms":0,"request_id":""}}`,
		},
		{
			name: "prompt cache counts: both when either is set, ignored params",
			in: &chat.Response{Text: "ok", Finish: chat.FinishStop, Ignored: []string{"top_p"},
				Usage: chat.Usage{PromptTokens: 1500, CompletionTokens: 5, TotalTokens: 1505, CacheReadTokens: 1200}},
			want: `{"message":"ok","finish_reason":"stop","usage":{"prompt_tokens":1500,"completion_tokens":5,"total_tokens":1505,"cached_tokens":1200,"cache_write_tokens":0},` +
				`"metadata":{"model":"","stop_reason":"","latency_ms":0,"request_id":"","ignored_params":["top_p"]}}`,
		},
		{
			name: "text stays literal, JavaScript line terminators escaped, invalid UTF-8 replaced",
			in:   &chat.Response{Text: "日本語 😀 <&>\n\"q\"\\\u2028\u2029\x01\xff", Finish: chat.FinishStop, Usage: chat.Usage{PromptTokens: 2147483647}},
			want: `{"message":"日本語 😀 <&>\n\"q\"\\\u2028\u2029\u0001` + "\uFFFD" + `","finish_reason":"stop","usage":{"prompt_tokens":2147483647,"completion_tokens":0,"total_tokens":0},"metadata":{"model":"","stop_reason":"","latency_ms":0,"request_id":""}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, string(AppendResponse(nil, tt.in)))
		})
	}
	require.True(t, strings.HasPrefix(string(AppendResponse([]byte("prefix:"), &chat.Response{})), `prefix:{"message":""`), "appends")
}

func TestAppendLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   chat.Event
		want string
	}{
		{"content", chat.Event{Kind: chat.EventContent, Text: "Analyzing your request..."},
			`{"type":"content","delta":"Analyzing your request..."}`},
		{"empty content", chat.Event{Kind: chat.EventContent}, `{"type":"content","delta":""}`},
		{"tool call header", chat.Event{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{ID: "tooluse_abc", Name: "save_policy"}},
			`{"type":"tool_call","index":0,"delta":{"id":"tooluse_abc","type":"function","function":{"name":"save_policy"}}}`},
		{"tool call arguments", chat.Event{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{Arguments: `{"filename":`}},
			`{"type":"tool_call","index":1,"delta":{"function":{"arguments":"{\"filename\":"}}}`},
		{"done", chat.Event{Kind: chat.EventDone, Finish: chat.FinishToolCalls, Usage: chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}},
			`{"type":"done","finish_reason":"tool_calls","usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`},
		{"done with cache counts", chat.Event{Kind: chat.EventDone, Finish: chat.FinishStop, Usage: chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150, CacheWriteTokens: 100}},
			`{"type":"done","finish_reason":"stop","usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"cached_tokens":0,"cache_write_tokens":100}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want+"\n", string(AppendLine(nil, &tt.in)))
		})
	}
	require.Empty(t, AppendLine(nil, &chat.Event{Kind: chat.EventToolCallEnd, Index: 0}), "the end marker has no JSONL line")
	require.Equal(t, `{"type":"error","error":{"code":"resource_exhausted","message":"slow down"}}`+"\n",
		string(AppendErrorLine(nil, "resource_exhausted", "slow down")))
}

func TestAppendError(t *testing.T) {
	t.Parallel()
	require.Equal(t, `{"error":"request body too large","code":"resource_exhausted","request_id":"r1"}`,
		string(AppendError(nil, "request body too large", "resource_exhausted", "r1")))
}
