package translate

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// TestResponseArgumentsExact: arguments are the input's own bytes, compacted, even where
// a decode and re-encode would change them (big integers, exponents, escapes, HTML).
func TestResponseArgumentsExact(t *testing.T) {
	t.Parallel()
	body := []byte(`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"store","input":{ "id" : 12345678901234567890, "ratio": 1.5, "e": 1E+2, "text": "日本語 😀 <&>", "esc": "\u00e9\/" }}}]}},"stopReason":"tool_use"}`)
	var upstream bedrock.ConverseResponse
	require.NoError(t, json.Unmarshal(body, &upstream))
	resp, err := Response(&upstream, nil)
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, `{"id":12345678901234567890,"ratio":1.5,"e":1E+2,"text":"日本語 😀 <&>","esc":"\u00e9\/"}`, resp.ToolCalls[0].Arguments)
}

func TestResponse(t *testing.T) {
	t.Parallel()
	text := func(s string) bedrock.ContentBlock { return bedrock.TextBlock(s) }
	upstream := &bedrock.ConverseResponse{
		Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: bedrock.RoleAssistant, Content: []bedrock.ContentBlock{
			text("a"), {ReasoningContent: &bedrock.ReasoningContentBlock{ReasoningText: &bedrock.ReasoningText{Text: "hm", Signature: "sig"}}}, text("b"),
			{ReasoningContent: &bedrock.ReasoningContentBlock{RedactedContent: "cmVk"}},
			{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "x_1", Name: "fs_read", Input: []byte(` { "p" : 1 } `)}},
		}}},
		StopReason: bedrock.StopToolUse,
		Usage:      &bedrock.TokenUsage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3},
	}
	names := &Plan{toolToClient: map[string]string{"fs_read": "fs.read"}, idToClient: map[string]string{"x_1": "x.1"}}
	got, err := Response(upstream, names)
	require.NoError(t, err)
	want := &chat.Response{
		Text:       "ab",
		Reasoning:  []chat.ReasoningBlock{{Text: "hm", Signature: "sig"}, {Redacted: true, Data: "cmVk"}},
		ToolCalls:  []chat.ToolCall{{ID: "x.1", Type: "function", Name: "fs.read", Arguments: `{"p":1}`}},
		Finish:     chat.FinishToolCalls,
		Usage:      chat.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
		StopReason: bedrock.StopToolUse,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestResponseUpstreamErrors(t *testing.T) {
	t.Parallel()
	msg := &bedrock.ConverseOutput{Message: &bedrock.Message{Role: bedrock.RoleAssistant}}
	tests := map[string]*bedrock.ConverseResponse{
		"nil":                    nil,
		"no output":              {StopReason: bedrock.StopEndTurn},
		"no message":             {Output: &bedrock.ConverseOutput{}, StopReason: bedrock.StopEndTurn},
		"malformed_model_output": {Output: msg, StopReason: bedrock.StopMalformedModelOutput},
		"malformed_tool_use":     {Output: msg, StopReason: bedrock.StopMalformedToolUse},
		"input not JSON": {Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Content: []bedrock.ContentBlock{
			{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "a", Name: "b", Input: []byte(`{"a":`)}}}}}, StopReason: bedrock.StopToolUse},
		"input a string": {Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Content: []bedrock.ContentBlock{
			{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "a", Name: "b", Input: []byte(`"x"`)}}}}}, StopReason: bedrock.StopToolUse},
	}
	for name, upstream := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp, err := Response(upstream, nil)
			require.ErrorIs(t, err, fault.ErrUpstream)
			assert.Nil(t, resp)
		})
	}
}

func TestArguments(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                   "{}",
		"  ":                 "{}",
		"null":               "{}",
		" null ":             "{}",
		"{}":                 "{}",
		"{ \"a\" : [ 1 ] }":  `{"a":[1]}`,
		`{"n":1.50}`:         `{"n":1.50}`,
		`{"s":"a b\u0020c"}`: `{"s":"a b\u0020c"}`,
	}
	for in, want := range tests {
		got, err := Arguments(json.RawMessage(in))
		require.NoError(t, err, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *bedrock.TokenUsage
		want chat.Usage
	}{
		{"nil", nil, chat.Usage{}},
		{"plain", &bedrock.TokenUsage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}, chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}},
		{"cache read and write", &bedrock.TokenUsage{InputTokens: 20, OutputTokens: 10, TotalTokens: 1530, CacheReadInputTokens: 1000, CacheWriteInputTokens: 500},
			chat.Usage{PromptTokens: 1520, CompletionTokens: 10, TotalTokens: 1530, CacheReadTokens: 1000, CacheWriteTokens: 500}},
		{"no total", &bedrock.TokenUsage{InputTokens: 5, OutputTokens: 7, CacheReadInputTokens: 3}, chat.Usage{PromptTokens: 8, CompletionTokens: 7, TotalTokens: 15, CacheReadTokens: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Usage(tt.in))
		})
	}
}

func BenchmarkResponse(b *testing.B) {
	body := []byte(`{"output":{"message":{"role":"assistant","content":[` +
		`{"text":"I'll validate the policy against your cluster and save the report."},` +
		`{"toolUse":{"toolUseId":"tooluse_H4V7nwUkPKObtlllGGYNx6","name":"validate_policy","input":{"policy":"apiVersion: kyverno.io/v1\nkind: ClusterPolicy","strict":true}}},` +
		`{"toolUse":{"toolUseId":"tooluse_Q2x9mYb0TqK1eJr5sLw8aP","name":"fs_write_file","input":{"path":"report.json","mode":420}}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":812,"outputTokens":96,"totalTokens":908},"metrics":{"latencyMs":1200}}`)
	var upstream bedrock.ConverseResponse
	if err := json.Unmarshal(body, &upstream); err != nil {
		b.Fatal(err)
	}
	names := &Plan{toolToClient: map[string]string{"fs_write_file": "fs.write_file"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Response(&upstream, names); err != nil {
			b.Fatal(err)
		}
	}
}
