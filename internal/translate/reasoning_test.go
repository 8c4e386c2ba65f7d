package translate

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// Model ids of each reasoning form (docs/BEDROCK.md F.2).
const (
	sonnet4  = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	opus46   = "anthropic.claude-opus-4-6-v1"
	sonnet46 = "anthropic.claude-sonnet-4-6"
	opus47   = "anthropic.claude-opus-4-7"
	nova2    = "amazon.nova-2-lite-v1:0"
	gptOSS   = "openai.gpt-oss-120b-1:0"
	deepseek = "deepseek.v3-v1:0"
	llama    = "meta.llama3-1-70b-instruct-v1:0"
)

// TestReasoningEffortMapping is PROTOCOL.md 11.1's table: every effort on every family, as
// additionalModelRequestFields and maxTokens.
func TestReasoningEffortMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model, effort string
		field         string // additionalModelRequestFields; "" for none
		maxTokens     int32  // the budget on top of default_max_tokens (4096), capped at the model's maximum
		ignored       []string
	}{
		{sonnet4, "", "", 4096, nil},
		{sonnet4, "none", "", 4096, nil},
		{sonnet4, "minimal", `{"thinking":{"type":"enabled","budget_tokens":1024}}`, 1024 + 4096, nil},
		{sonnet4, "low", `{"thinking":{"type":"enabled","budget_tokens":1024}}`, 1024 + 4096, nil},
		{sonnet4, "medium", `{"thinking":{"type":"enabled","budget_tokens":4096}}`, 4096 + 4096, nil},
		{sonnet4, "high", `{"thinking":{"type":"enabled","budget_tokens":16384}}`, 16384 + 4096, nil},
		{sonnet4, "xhigh", `{"thinking":{"type":"enabled","budget_tokens":32000}}`, 32000 + 4096, nil},
		{sonnet4, "max", `{"thinking":{"type":"enabled","budget_tokens":32000}}`, 32000 + 4096, nil},
		{opus46, "low", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"low"}}`, 4096, nil},
		{opus46, "xhigh", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"max"}}`, 4096, nil},
		{opus46, "max", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"max"}}`, 4096, nil},
		{sonnet46, "minimal", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"low"}}`, 4096, nil},
		{sonnet46, "xhigh", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"high"}}`, 4096, nil},
		{sonnet46, "max", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"high"}}`, 4096, nil},
		{opus47, "medium", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"medium"}}`, 4096, nil},
		{opus47, "xhigh", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"xhigh"}}`, 4096, nil},
		{opus47, "max", `{"thinking":{"type":"adaptive"},"output_config":{"effort":"max"}}`, 4096, nil},
		{nova2, "minimal", `{"reasoningConfig":{"type":"enabled","maxReasoningEffort":"low"}}`, 4096, nil},
		{nova2, "max", `{"reasoningConfig":{"type":"enabled","maxReasoningEffort":"high"}}`, 4096, nil},
		{gptOSS, "medium", `{"reasoning_effort":"medium"}`, 4096, nil},
		{gptOSS, "xhigh", `{"reasoning_effort":"high"}`, 4096, nil},
		{deepseek, "low", `{"reasoning_config":"low"}`, 4096, nil},
		{deepseek, "max", `{"reasoning_config":"high"}`, 4096, nil},
		{llama, "high", "", 2048, []string{"reasoning_effort"}},
		{llama, "none", "", 2048, nil},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.effort, func(t *testing.T) {
			t.Parallel()
			req := chat.Request{ReasoningEffort: tt.effort, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
			out, names, err := Request(&req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			assert.Equal(t, tt.field, string(out.AdditionalModelRequestFields))
			require.NotNil(t, out.InferenceConfig)
			assert.Equal(t, tt.maxTokens, *out.InferenceConfig.MaxTokens)
			assert.Equal(t, tt.ignored, names.Ignored)
		})
	}
}

// TestThinkingExtension: Anthropic's thinking goes to Claude as given and wins over
// reasoning_effort; disabled is never sent; elsewhere it is ignored and listed.
func TestThinkingExtension(t *testing.T) {
	t.Parallel()
	budget := ptr(int32(2048))
	tests := []struct {
		name, model string
		effort      string
		thinking    chat.Thinking
		maxTokens   *int32
		field       string
		wantMax     int32
		ignored     []string
	}{
		{"enabled, the budget on top of max_tokens", sonnet4, "", chat.Thinking{Type: "enabled", BudgetTokens: budget}, ptr(int32(500)),
			`{"thinking":{"type":"enabled","budget_tokens":2048}}`, 2548, nil},
		{"wins over reasoning_effort", sonnet4, "high", chat.Thinking{Type: "enabled", BudgetTokens: budget}, nil,
			`{"thinking":{"type":"enabled","budget_tokens":2048}}`, 2048 + 4096, nil},
		{"adaptive takes the effort", opus46, "high", chat.Thinking{Type: "adaptive"}, nil,
			`{"thinking":{"type":"adaptive"},"output_config":{"effort":"high"}}`, 4096, nil},
		{"adaptive alone", opus47, "", chat.Thinking{Type: "adaptive"}, nil, `{"thinking":{"type":"adaptive"}}`, 4096, nil},
		{"disabled is never sent", opus47, "high", chat.Thinking{Type: "disabled"}, nil, "", 4096, []string{"reasoning_effort"}},
		{"ignored off Claude", nova2, "", chat.Thinking{Type: "enabled", BudgetTokens: budget}, nil, "", 4096, []string{"thinking"}},
		{"ignored off Claude, the effort still maps", gptOSS, "low", chat.Thinking{Type: "adaptive"}, nil, `{"reasoning_effort":"low"}`, 4096, []string{"thinking"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			th := tt.thinking
			req := chat.Request{ReasoningEffort: tt.effort, Thinking: &th, MaxTokens: tt.maxTokens,
				Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
			out, names, err := Request(&req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			assert.Equal(t, tt.field, string(out.AdditionalModelRequestFields))
			assert.Equal(t, tt.wantMax, *out.InferenceConfig.MaxTokens)
			assert.Equal(t, tt.ignored, names.Ignored)
		})
	}
}

// TestReasoningRefusals: values outside the contract are 400s naming the field.
func TestReasoningRefusals(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		req   chat.Request
		param string
		msg   string
	}{
		"effort":       {chat.Request{ReasoningEffort: "extreme"}, "reasoning_effort", `reasoning_effort "extreme" is not one of none, minimal, low, medium, high, xhigh, max`},
		"type":         {chat.Request{Thinking: &chat.Thinking{Type: "on"}}, "thinking.type", `thinking.type "on" is not one of enabled, adaptive, disabled`},
		"no type":      {chat.Request{Thinking: &chat.Thinking{}}, "thinking.type", `thinking.type is missing; it is "enabled", "adaptive" or "disabled"`},
		"small budget": {chat.Request{Thinking: &chat.Thinking{Type: "enabled", BudgetTokens: ptr(int32(1023))}}, "thinking.budget_tokens", "thinking.budget_tokens must be at least 1024, got 1023"},
		"no budget":    {chat.Request{Thinking: &chat.Thinking{Type: "enabled"}}, "thinking.budget_tokens", `thinking.budget_tokens is required when thinking.type is "enabled"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := tt.req
			req.Messages = []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
			_, _, err := Request(&req, capabilities.Lookup(sonnet4))
			require.ErrorIs(t, err, fault.ErrInvalidRequest)
			var re *fault.RequestError
			require.True(t, errors.As(err, &re))
			assert.Equal(t, tt.param, re.Param)
			assert.Equal(t, tt.msg, re.Msg)
		})
	}
}

// toolTurn is a history whose last user turn answers a tool call of the assistant turn
// before it, which carries blocks.
func toolTurn(blocks ...chat.ReasoningBlock) []chat.Message {
	return []chat.Message{
		{Role: chat.RoleUser, Content: "list pods"},
		{Role: chat.RoleAssistant, Content: "Listing.", Reasoning: blocks, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "get_pods", Arguments: `{}`}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "pod-a"},
	}
}

var signed = chat.ReasoningBlock{Text: "The user wants pods.\n", Signature: "EqQBCkgIBRAB/+="}

// TestReasoningHistory: blocks go first in their turn byte for byte, only to Claude with
// thinking on; a tool turn without a signed block turns thinking off, as do a forced
// tool choice and a prefill, each with its outcome (docs/PROTOCOL.md 11.3, 11.4).
func TestReasoningHistory(t *testing.T) {
	t.Parallel()
	tools := []chat.Tool{{Name: "get_pods"}}
	tests := []struct {
		name    string
		model   string
		req     chat.Request
		outcome string
		on      bool
		first   string // the assistant turn's first block, as JSON
	}{
		{"kept first, byte for byte", sonnet4, chat.Request{ReasoningEffort: "low", Messages: toolTurn(signed, chat.ReasoningBlock{Redacted: true, Data: "cmVk/+=="})}, "", true,
			`{"reasoningContent":{"reasoningText":{"text":"The user wants pods.\n","signature":"EqQBCkgIBRAB/+="}}}`},
		{"missing: thinking off", sonnet4, chat.Request{ReasoningEffort: "low", Messages: toolTurn()}, chat.ThinkingMissingSignature, false, `{"text":"Listing."}`},
		{"unsigned is missing", sonnet4, chat.Request{ReasoningEffort: "low", Messages: toolTurn(chat.ReasoningBlock{Text: "no signature"})}, chat.ThinkingMissingSignature, false, `{"text":"Listing."}`},
		{"thinking off: no block sent", sonnet4, chat.Request{Messages: toolTurn(signed)}, "", false, `{"text":"Listing."}`},
		{"another family: no block sent", nova2, chat.Request{ReasoningEffort: "low", Messages: toolTurn(signed)}, "", false, `{"text":"Listing."}`},
		{"forced tool choice", sonnet4, chat.Request{ReasoningEffort: "low", ToolChoice: chat.ToolChoice{Mode: chat.ChoiceRequired}, Tools: tools, Messages: toolTurn(signed)},
			chat.ThinkingForcedToolChoice, false, `{"text":"Listing."}`},
		{"forced function", sonnet4, chat.Request{ReasoningEffort: "low", ToolChoice: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "get_pods"}, Tools: tools, Messages: toolTurn(signed)},
			chat.ThinkingForcedToolChoice, false, `{"text":"Listing."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, names, err := Request(&tt.req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			assert.Equal(t, tt.outcome, names.Thinking)
			assert.Equal(t, tt.on, names.ThinkingOn)
			require.Len(t, out.Messages, 3)
			first, err := json.Marshal(out.Messages[1].Content[0])
			require.NoError(t, err)
			assert.Equal(t, tt.first, string(first))
			if tt.outcome != "" {
				assert.Empty(t, string(out.AdditionalModelRequestFields), "thinking turned off sends no switch")
			}
			if !tt.on {
				for _, m := range out.Messages {
					for _, b := range m.Content {
						assert.Nil(t, b.ReasoningContent)
					}
				}
			}
		})
	}

	// A failover to another foundation model sends no block and no switch, on any family
	// with thinking asked for, and says so (docs/PROTOCOL.md 14.4).
	for _, model := range []string{sonnet4, nova2} {
		out, names, err := RequestWith(&chat.Request{ReasoningEffort: "low", Messages: toolTurn(signed)}, capabilities.Lookup(model),
			Options{DefaultMaxTokens: DefaultMaxTokens, OtherModel: true})
		require.NoError(t, err)
		assert.Equal(t, chat.ThinkingFailover, names.Thinking, model)
		assert.False(t, names.ThinkingOn, model)
		assert.Empty(t, out.AdditionalModelRequestFields, model)
		assert.Equal(t, int32(DefaultMaxTokens), *out.InferenceConfig.MaxTokens, "no budget: "+model)
		for _, m := range out.Messages {
			for _, b := range m.Content {
				assert.Nil(t, b.ReasoningContent, model)
			}
		}
	}
	// Without thinking asked for, a failover changes nothing.
	_, names, err := RequestWith(&chat.Request{Messages: toolTurn(signed)}, capabilities.Lookup(sonnet4), Options{OtherModel: true})
	require.NoError(t, err)
	assert.Empty(t, names.Thinking)

	// A prefill turns thinking off.
	prefill := []chat.Message{{Role: chat.RoleUser, Content: "write yaml"}, {Role: chat.RoleAssistant, Content: "apiVersion:"}}
	out, names, err := Request(&chat.Request{ReasoningEffort: "low", Messages: prefill}, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	assert.Equal(t, chat.ThinkingPrefill, names.Thinking)
	assert.Empty(t, out.AdditionalModelRequestFields)

	// A redacted block goes back as the base64 text Bedrock sent.
	out, _, err = Request(&chat.Request{ReasoningEffort: "low", Messages: toolTurn(signed, chat.ReasoningBlock{Redacted: true, Data: "cmVk/+=="})}, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	second, err := json.Marshal(out.Messages[1].Content[1])
	require.NoError(t, err)
	assert.Equal(t, `{"reasoningContent":{"redactedContent":"cmVk/+=="}}`, string(second))

	// Thinking parts stand for blocks when the message has none; an assistant turn
	// merged from two messages keeps their blocks in message order.
	msgs := []chat.Message{
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, Parts: []chat.Part{{Type: chat.PartThinking, Reasoning: &chat.ReasoningBlock{Text: "a", Signature: "s1"}}},
			ToolCalls: []chat.ToolCall{{ID: "c1", Name: "f"}}},
		{Role: chat.RoleAssistant, Reasoning: []chat.ReasoningBlock{{Text: "b", Signature: "s2"}}, ToolCalls: []chat.ToolCall{{ID: "c2", Name: "f"}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "1"},
		{Role: chat.RoleTool, ToolCallID: "c2", Content: "2"},
	}
	out, names, err = Request(&chat.Request{ReasoningEffort: "low", Messages: msgs}, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	assert.True(t, names.ThinkingOn)
	content := out.Messages[1].Content
	require.Len(t, content, 4)
	assert.Equal(t, "a", content[0].ReasoningContent.ReasoningText.Text)
	assert.Equal(t, "b", content[1].ReasoningContent.ReasoningText.Text)
	assert.NotNil(t, content[2].ToolUse)
}

// TestThinkingSampling: with thinking on, Claude is sent no temperature or top_p (listed as
// ignored); Opus 4.7 never is; a budget above 21,333 maxTokens needs ConverseStream.
func TestThinkingSampling(t *testing.T) {
	t.Parallel()
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
	req := chat.Request{ReasoningEffort: "low", Temperature: ptr(0.2), TopP: ptr(0.9), Messages: msgs}
	out, names, err := Request(&req, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	assert.Nil(t, out.InferenceConfig.Temperature)
	assert.Nil(t, out.InferenceConfig.TopP)
	assert.Equal(t, []string{"temperature", "top_p"}, names.Ignored)
	assert.False(t, names.StreamOnly)

	req = chat.Request{Temperature: ptr(0.2), Messages: msgs}
	out, names, err = Request(&req, capabilities.Lookup(opus47))
	require.NoError(t, err)
	assert.Nil(t, out.InferenceConfig.Temperature)
	assert.Equal(t, []string{"temperature"}, names.Ignored)

	req = chat.Request{Temperature: ptr(0.2), Messages: msgs}
	out, _, err = Request(&req, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	assert.Equal(t, 0.2, *out.InferenceConfig.Temperature, "without thinking, temperature goes")

	req = chat.Request{ReasoningEffort: "high", Messages: msgs}
	_, names, err = Request(&req, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	assert.False(t, names.StreamOnly, "16384 + 4096 is 20480, within Converse's 21,333")
	req = chat.Request{ReasoningEffort: "xhigh", Messages: msgs}
	_, names, err = Request(&req, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	assert.True(t, names.StreamOnly, "32000 + 4096 needs ConverseStream")
}

// TestReasoningResponse: every block comes back in Bedrock's order, one with empty text
// and a signature included (Opus 4.7 writes those).
func TestReasoningResponse(t *testing.T) {
	t.Parallel()
	answer := &bedrock.ConverseResponse{StopReason: "end_turn", Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: "assistant", Content: []bedrock.ContentBlock{
		{ReasoningContent: &bedrock.ReasoningContentBlock{ReasoningText: &bedrock.ReasoningText{Signature: "only"}}},
		{ReasoningContent: &bedrock.ReasoningContentBlock{RedactedContent: "ZGF0YQ=="}},
		bedrock.TextBlock("ok"),
	}}}}
	resp, err := Response(answer, nil)
	require.NoError(t, err)
	assert.Equal(t, []chat.ReasoningBlock{{Signature: "only"}, {Redacted: true, Data: "ZGF0YQ=="}}, resp.Reasoning)
	assert.Equal(t, "", chat.ReasoningText(resp.Reasoning))
}

// TestDefaultEffort: an alias's reasoning_effort applies when the request sets neither it
// nor thinking, and is not the client's to be told about where the model has no reasoning.
func TestDefaultEffort(t *testing.T) {
	t.Parallel()
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
	out, names, err := RequestWith(&chat.Request{Messages: msgs}, capabilities.Lookup(sonnet4), Options{ReasoningEffort: "low"})
	require.NoError(t, err)
	assert.Equal(t, `{"thinking":{"type":"enabled","budget_tokens":1024}}`, string(out.AdditionalModelRequestFields))
	assert.True(t, names.ThinkingOn)

	out, names, err = RequestWith(&chat.Request{Messages: msgs, ReasoningEffort: "none"}, capabilities.Lookup(sonnet4), Options{ReasoningEffort: "low"})
	require.NoError(t, err)
	assert.Empty(t, out.AdditionalModelRequestFields, "the request's own none wins")
	assert.False(t, names.ThinkingOn)

	_, names, err = RequestWith(&chat.Request{Messages: msgs}, capabilities.Lookup(llama), Options{ReasoningEffort: "low"})
	require.NoError(t, err)
	assert.Empty(t, names.Ignored)
}
