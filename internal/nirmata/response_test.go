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
			name: "validation errors on the invalid call only (13.2)",
			in: &chat.Response{ToolCalls: []chat.ToolCall{
				{ID: "t1", Name: "save_policy", Arguments: `{"replicas":"3"}`, ValidationErrors: []string{`/: missing required property "filename"`, `/replicas: expected integer, got string`}},
				{ID: "t2", Name: "list_policies", Arguments: `{}`},
			}, Finish: chat.FinishToolCalls, ToolValidation: "invalid"},
			want: `{"message":"","tool_calls":[` +
				`{"id":"t1","type":"function","function":{"name":"save_policy","arguments":"{\"replicas\":\"3\"}"},"validation_errors":["/: missing required property \"filename\"","/replicas: expected integer, got string"]},` +
				`{"id":"t2","type":"function","function":{"name":"list_policies","arguments":"{}"}}],` +
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
		{"tool call arguments with validation errors beside the delta (13.2)", chat.Event{Kind: chat.EventToolCall, Index: 0,
			ToolCall: chat.ToolCall{Arguments: `{"replicas":"3"}`, ValidationErrors: []string{`/replicas: expected integer, got string`}}},
			`{"type":"tool_call","index":0,"delta":{"function":{"arguments":"{\"replicas\":\"3\"}"}},"validation_errors":["/replicas: expected integer, got string"]}`},
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
		string(AppendError(nil, "request body too large", "resource_exhausted", "r1", "")))
	require.Equal(t, `{"error":"key \"ci\" is over its tokens_per_minute limit (200000); retry in 23 s","code":"resource_exhausted","request_id":"r2","limit":"tokens_per_minute"}`,
		string(AppendError(nil, `key "ci" is over its tokens_per_minute limit (200000); retry in 23 s`, "resource_exhausted", "r2", "tokens_per_minute")))
}

// TestReasoningAnswers: the unary answer's reasoning and reasoning_blocks, and
// metadata.thinking; the JSONL reasoning lines only through AppendReasoningLine (a request
// that opted in); chunked Reasoning and ReasoningBlock lines (docs/PROTOCOL.md 11.2).
func TestReasoningAnswers(t *testing.T) {
	t.Parallel()
	blocks := []chat.ReasoningBlock{{Text: "Pods need a label rule; save it.", Signature: "EqQBCkgIBRAB"}, {Text: "Then answer.", Signature: "s2"}, {Redacted: true, Data: "ZGF0YQ=="}}
	got := string(AppendResponse(nil, &chat.Response{Text: "ok", Reasoning: blocks, Finish: chat.FinishStop, Thinking: chat.ThinkingRestored}))
	require.Equal(t, `{"message":"ok","finish_reason":"stop","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},`+
		`"metadata":{"model":"","stop_reason":"","latency_ms":0,"request_id":"","thinking":"restored"},`+
		`"reasoning":"Pods need a label rule; save it.\nThen answer.",`+
		`"reasoning_blocks":[{"type":"thinking","thinking":"Pods need a label rule; save it.","signature":"EqQBCkgIBRAB"},{"type":"thinking","thinking":"Then answer.","signature":"s2"},{"type":"redacted_thinking","data":"ZGF0YQ=="}]}`, got)

	reasoning := chat.Event{Kind: chat.EventReasoning, Text: "Pods need a label rule; save it."}
	block := chat.Event{Kind: chat.EventReasoningBlock, Block: blocks[0]}
	require.Empty(t, AppendLine(nil, &reasoning), "no reasoning line without the opt-in")
	require.Empty(t, AppendLine(nil, &block))
	require.Equal(t, `{"type":"reasoning","delta":"Pods need a label rule; save it."}`+"\n", string(AppendReasoningLine(nil, &reasoning)))
	require.Equal(t, `{"type":"reasoning_block","block":{"type":"thinking","thinking":"Pods need a label rule; save it.","signature":"EqQBCkgIBRAB"}}`+"\n", string(AppendReasoningLine(nil, &block)))
	content := chat.Event{Kind: chat.EventContent, Text: "Saving the policy."}
	require.Equal(t, string(AppendLine(nil, &content)), string(AppendReasoningLine(nil, &content)))

	c := NewChunker("r")
	var out []byte
	for _, ev := range []chat.Event{reasoning, block, {Kind: chat.EventDone, Finish: chat.FinishStop}} {
		out = c.Append(out, &ev)
	}
	require.Equal(t, `{"id":"r-1","type":"Reasoning","data":"Pods need a label rule; save it."}`+"\n"+
		`{"id":"r-2","type":"ReasoningBlock","data":"{\"reasoning_block\":{\"type\":\"thinking\",\"thinking\":\"Pods need a label rule; save it.\",\"signature\":\"EqQBCkgIBRAB\"}}"}`+"\n"+
		`{"id":"r-3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"stop\"}"}`+"\n", string(out))
}
