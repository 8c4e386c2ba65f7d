package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// TestParallelToolCalls: parallel_tool_calls false reaches Claude as Anthropic's
// tool_choice, typed like the Converse toolChoice, and only where tools are offered
// (docs/BEDROCK.md J); every family keeps one call per answer.
func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	const claude, nova = "us.anthropic.claude-sonnet-4-20250514-v1:0", "amazon.nova-pro-v1:0"
	off, on := ptr(false), ptr(true)
	user := []chat.Message{{Role: chat.RoleUser, Content: "go"}}
	tools := []chat.Tool{{Name: "get.weather"}, {Name: "b"}}
	// A history where the client answered the first of two calls only.
	partial := []chat.Message{{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "b"}, {ID: "c2", Name: "b"}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "ok"}}
	tests := []struct {
		name    string
		model   string
		req     chat.Request
		field   string // additionalModelRequestFields, "" for none
		oneCall bool
	}{
		{"auto", claude, chat.Request{Messages: user, Tools: tools, ParallelToolCalls: off},
			`{"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`, true},
		{"required", claude, chat.Request{Messages: user, Tools: tools, ParallelToolCalls: off, ToolChoice: chat.ToolChoice{Mode: chat.ChoiceRequired}},
			`{"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`, true},
		{"a function, by its Bedrock name", claude, chat.Request{Messages: user, Tools: tools, ParallelToolCalls: off, ToolChoice: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "get.weather"}},
			`{"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}}`, true},
		{"none: tools only for the history", claude, chat.Request{Messages: partial, Tools: tools, ParallelToolCalls: off, ToolChoice: chat.ToolChoice{Mode: chat.ChoiceNone}}, "", true},
		{"no tools", claude, chat.Request{Messages: user, ParallelToolCalls: off}, "", true},
		{"other families: one call, no field", nova, chat.Request{Messages: user, Tools: tools, ParallelToolCalls: off}, "", true},
		{"default", claude, chat.Request{Messages: user, Tools: tools}, "", false},
		{"a client that answered one of two calls", claude, chat.Request{Messages: partial, Tools: tools},
			`{"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`, true},
		{"unless it asked for parallel calls", claude, chat.Request{Messages: partial, Tools: tools, ParallelToolCalls: on}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, names, err := Request(&tt.req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			assert.Equal(t, tt.field, string(out.AdditionalModelRequestFields))
			assert.Equal(t, tt.oneCall, names.FirstCallOnly())
			assert.Equal(t, tt.req.ParallelToolCalls == nil && tt.oneCall, names.Stats.ParallelDisabled)
		})
	}
}

// TestFirstResultOnly: a client known to answer only the first of several calls gets one
// call an answer unless its request decides, itself or through its history, which then
// says why.
func TestFirstResultOnly(t *testing.T) {
	t.Parallel()
	claude := capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0")
	user := []chat.Message{{Role: chat.RoleUser, Content: "go"}}
	partial := []chat.Message{{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "b"}, {ID: "c2", Name: "b"}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "ok"}}
	tools := []chat.Tool{{Name: "a"}, {Name: "b"}}
	for _, tt := range []struct {
		name                          string
		req                           chat.Request
		oneCall, remembered, disabled bool
	}{
		{"known client", chat.Request{Messages: user, Tools: tools}, true, true, false},
		{"its request asks for parallel calls", chat.Request{Messages: user, Tools: tools, ParallelToolCalls: ptr(true)}, false, false, false},
		{"its history shows it", chat.Request{Messages: partial, Tools: tools}, true, false, true},
	} {
		out, names, err := RequestWith(&tt.req, claude, Options{FirstResultOnly: true})
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.oneCall, names.FirstCallOnly(), tt.name)
		assert.Equal(t, tt.remembered, names.Stats.ParallelRemembered, tt.name)
		assert.Equal(t, tt.disabled, names.Stats.ParallelDisabled, tt.name)
		if tt.oneCall {
			assert.Contains(t, string(out.AdditionalModelRequestFields), `"disable_parallel_tool_use":true`, tt.name)
		}
	}
}

// TestFirstCallOnly: an answer that may hold one call keeps its first and counts the rest.
func TestFirstCallOnly(t *testing.T) {
	t.Parallel()
	answer := &bedrock.ConverseResponse{StopReason: "tool_use", Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: "assistant", Content: []bedrock.ContentBlock{
		bedrock.TextBlock("Calling."),
		{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "t1", Name: "a", Input: []byte(`{}`)}},
		{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "t2", Name: "b", Input: []byte(`{}`)}},
		{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "t3", Name: "c", Input: []byte(`{}`)}},
	}}}}
	resp, err := Response(answer, &Plan{OneCall: true})
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, "t1", resp.ToolCalls[0].ID)
	assert.Equal(t, 2, resp.DroppedToolCalls)
	assert.Equal(t, chat.FinishToolCalls, resp.Finish)

	resp, err = Response(answer, nil)
	require.NoError(t, err)
	assert.Len(t, resp.ToolCalls, 3)
	assert.Zero(t, resp.DroppedToolCalls)
}

func TestToolRounds(t *testing.T) {
	t.Parallel()
	call := func(id string) chat.Message {
		return chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: id, Name: "f"}}}
	}
	result := func(id string) chat.Message { return chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: "ok"} }
	user := chat.Message{Role: chat.RoleUser, Content: "go"}
	for name, tt := range map[string]struct {
		msgs []chat.Message
		want int
	}{
		"none yet":   {[]chat.Message{user}, 0},
		"two rounds": {[]chat.Message{user, call("a"), result("a"), call("b"), result("b")}, 2},
		"parallel calls as separate messages are one":            {[]chat.Message{user, call("a"), call("b"), result("a"), result("b")}, 1},
		"text between a turn's calls":                            {[]chat.Message{user, call("a"), {Role: chat.RoleAssistant, Content: "and"}, call("b"), result("a")}, 1},
		"rounds before the last user message are another task's": {[]chat.Message{user, call("a"), result("a"), user, call("b"), result("b")}, 1},
	} {
		assert.Equal(t, tt.want, toolRounds(tt.msgs), name)
	}
}

// TestToolBudgetSpent: once max_tool_rounds are spent the model is offered no tools (the
// history keeps its toolConfig, without toolChoice or the parallel field), a system note
// says so, and the answer keeps no call.
func TestToolBudgetSpent(t *testing.T) {
	t.Parallel()
	tools := []chat.Tool{{Name: "f"}}
	history := []chat.Message{{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "a", Name: "f"}}},
		{Role: chat.RoleTool, ToolCallID: "a", Content: "ok"}}
	model := capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0")

	out, names, err := Request(&chat.Request{Messages: history, Tools: tools, MaxToolRounds: ptr(int32(1)),
		ToolChoice: chat.ToolChoice{Mode: chat.ChoiceRequired}, ParallelToolCalls: ptr(false)}, model)
	require.NoError(t, err)
	assert.True(t, names.BudgetExhausted)
	require.NotNil(t, out.ToolConfig, "the history's toolUse needs a toolConfig")
	assert.Nil(t, out.ToolConfig.ToolChoice)
	assert.Empty(t, out.AdditionalModelRequestFields)
	assert.Equal(t, budgetNote, out.System[len(out.System)-1].Text)

	out, names, err = Request(&chat.Request{Messages: history[:1], Tools: tools, MaxToolRounds: ptr(int32(0))}, model)
	require.NoError(t, err)
	assert.True(t, names.BudgetExhausted)
	assert.Nil(t, out.ToolConfig, "no history: no tools at all")

	_, names, err = Request(&chat.Request{Messages: history, Tools: tools, MaxToolRounds: ptr(int32(2))}, model)
	require.NoError(t, err)
	assert.False(t, names.BudgetExhausted)

	_, _, err = Request(&chat.Request{Messages: history, MaxToolRounds: ptr(int32(-1))}, model)
	var re *fault.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "max_tool_rounds", re.Param)

	answer := &bedrock.ConverseResponse{StopReason: "tool_use", Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: "assistant", Content: []bedrock.ContentBlock{
		bedrock.TextBlock("Calling."), {ToolUse: &bedrock.ToolUseBlock{ToolUseID: "t1", Name: "f", Input: []byte(`{}`)}}}}}}
	resp, err := Response(answer, &Plan{BudgetExhausted: true})
	require.NoError(t, err)
	assert.Empty(t, resp.ToolCalls)
	assert.Equal(t, 1, resp.DroppedToolCalls)
	assert.Equal(t, chat.FinishStop, resp.Finish)
	assert.True(t, resp.BudgetExhausted)
}
