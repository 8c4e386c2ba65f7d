package translate_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Issue 25's fields, which Anthropic's Messages API brings: a tool result's is_error,
// top_k and the anthropic-beta values.

const (
	haiku45Model = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
	opus41Model  = "us.anthropic.claude-opus-4-1-20250805-v1:0"
	sonnet37     = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
	sonnet4ID    = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	sonnet46ID   = "global.anthropic.claude-sonnet-4-6"
	opus47ID     = "global.anthropic.claude-opus-4-7"
	gptOSSID     = "openai.gpt-oss-120b-1:0"
)

func hello() []chat.Message { return []chat.Message{{Role: chat.RoleUser, Content: "hello"}} }

// TestToolError: a tool message that reports its call failed becomes a toolResult with
// status "error"; one that does not carries no status.
func TestToolError(t *testing.T) {
	t.Parallel()
	req := &chat.Request{Model: sonnet45, Messages: []chat.Message{
		{Role: chat.RoleUser, Content: "run both"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "a", Name: "run", Arguments: "{}"}, {ID: "b", Name: "run", Arguments: "{}"}}},
		{Role: chat.RoleTool, ToolCallID: "a", Content: "exit status 1", ToolError: true},
		{Role: chat.RoleTool, ToolCallID: "b", Content: "ok"},
	}, Tools: []chat.Tool{{Name: "run"}}}
	out, _, err := translate.Request(req, capabilities.Lookup(sonnet45))
	require.NoError(t, err)
	results := out.Messages[2].Content
	require.Len(t, results, 2)
	assert.Equal(t, bedrock.StatusError, results[0].ToolResult.Status)
	assert.Equal(t, "exit status 1", *results[0].ToolResult.Content[0].Text)
	assert.Empty(t, results[1].ToolResult.Status)
	body, err := json.Marshal(out)
	require.NoError(t, err)
	require.NoError(t, validateBody(sonnet45, body))
}

// TestTopK: top_k goes where each family takes it (BEDROCK.md A21), and is dropped and
// listed where the model refuses it (G11) or has no such field.
func TestTopK(t *testing.T) {
	t.Parallel()
	k := int32(40)
	on := &chat.Thinking{Type: chat.ThinkingEnabled, BudgetTokens: ptr(int32(2048))}
	for _, tt := range []struct {
		name, model string
		thinking    *chat.Thinking
		fields      string // additionalModelRequestFields
		ignored     []string
	}{
		{"Claude", sonnet4ID, nil, `{"top_k":40}`, nil},
		{"Claude 4.5", sonnet45, nil, `{"top_k":40}`, nil},
		{"Nova", novaPro, nil, `{"inferenceConfig":{"topK":40}}`, nil},
		{"Claude thinking", sonnet4ID, on, `{"thinking":{"type":"enabled","budget_tokens":2048}}`, []string{"top_k"}},
		{"Opus 4.7 whatever the thinking", opus47ID, nil, ``, []string{"top_k"}},
		{"gpt-oss", gptOSSID, nil, ``, []string{"top_k"}},
		{"Llama", llama, nil, ``, []string{"top_k"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &chat.Request{Model: tt.model, Messages: hello(), TopK: &k, Thinking: tt.thinking}
			out, plan, err := translate.Request(req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			assert.Equal(t, tt.fields, string(out.AdditionalModelRequestFields))
			assert.Equal(t, tt.ignored, plan.Ignored)
			body, err := json.Marshal(out)
			require.NoError(t, err)
			require.NoError(t, validateBody(tt.model, body))
		})
	}
	_, _, err := translate.Request(&chat.Request{Messages: hello(), TopK: ptr(int32(-1))}, capabilities.Lookup(sonnet4ID))
	require.Error(t, err)
	assert.Equal(t, "invalid request: top_k must be at least 0, got -1", err.Error())
}

// TestBetas: the anthropic-beta values a model takes go in anthropic_beta, once each,
// beside the other additional fields; the others, and all on a model that is not Claude,
// are listed as ignored by name.
func TestBetas(t *testing.T) {
	t.Parallel()
	claudeCode := []string{"claude-code-20250219", "interleaved-thinking-2025-05-14", "context-1m-2025-08-07",
		"context-management-2025-06-27", "interleaved-thinking-2025-05-14"}
	for _, tt := range []struct {
		name, model string
		betas       []string
		fields      string
		ignored     []string
	}{
		{"Sonnet 4.5", sonnet45, claudeCode,
			`{"thinking":{"type":"enabled","budget_tokens":4096},"anthropic_beta":["interleaved-thinking-2025-05-14","context-1m-2025-08-07"]}`,
			[]string{"anthropic-beta: claude-code-20250219", "anthropic-beta: context-management-2025-06-27"}},
		{"Haiku 4.5 has no 1M context", haiku45Model, claudeCode,
			`{"thinking":{"type":"enabled","budget_tokens":4096},"anthropic_beta":["interleaved-thinking-2025-05-14"]}`,
			[]string{"anthropic-beta: claude-code-20250219", "anthropic-beta: context-1m-2025-08-07", "anthropic-beta: context-management-2025-06-27"}},
		{"3.7 Sonnet", sonnet37, []string{"token-efficient-tools-2025-02-19", "interleaved-thinking-2025-05-14"},
			`{"thinking":{"type":"enabled","budget_tokens":4096},"anthropic_beta":["token-efficient-tools-2025-02-19"]}`,
			[]string{"anthropic-beta: interleaved-thinking-2025-05-14"}},
		{"Sonnet 4.6 interleaves by itself", sonnet46ID, []string{"interleaved-thinking-2025-05-14"},
			`{"thinking":{"type":"adaptive"},"output_config":{"effort":"medium"}}`,
			[]string{"anthropic-beta: interleaved-thinking-2025-05-14"}},
		{"Nova", novaPro, []string{"interleaved-thinking-2025-05-14"}, ``,
			[]string{"reasoning_effort", "anthropic-beta: interleaved-thinking-2025-05-14"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &chat.Request{Model: tt.model, Messages: hello(), ReasoningEffort: "medium", Betas: tt.betas}
			out, plan, err := translate.Request(req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			assert.Equal(t, tt.fields, string(out.AdditionalModelRequestFields))
			assert.Equal(t, tt.ignored, plan.Ignored)
			body, err := json.Marshal(out)
			require.NoError(t, err)
			require.NoError(t, validateBody(tt.model, body))
		})
	}
}

// claudeCodeRequest is the shape of the request Claude Code sends by default (issue 25):
// system blocks with cache_control, a dozen tools, one an MCP tool whose name is over
// Bedrock's 64 characters, cache_control on the last user block, thinking enabled with a
// budget of 31,999 beside max_tokens 32,000, temperature 1, and its anthropic-beta values.
func claudeCodeRequest(model string) *chat.Request {
	eph := &chat.CacheControl{Type: "ephemeral"}
	req := &chat.Request{Model: model, MaxTokens: ptr(int32(32000)), Temperature: ptr(1.0),
		Thinking: &chat.Thinking{Type: chat.ThinkingEnabled, BudgetTokens: ptr(int32(31999))},
		Betas: []string{"claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
			"fine-grained-tool-streaming-2025-05-14"},
		Messages: []chat.Message{
			{Role: chat.RoleSystem, Parts: []chat.Part{
				{Type: chat.PartText, Text: "You are Claude Code, Anthropic's official CLI for Claude.", CacheControl: eph},
				{Type: chat.PartText, Text: strings.Repeat("Follow the instructions. ", 400), CacheControl: eph},
			}},
			{Role: chat.RoleUser, Parts: []chat.Part{
				{Type: chat.PartText, Text: "<system-reminder>As you answer the user's questions, you can use the following context.</system-reminder>"},
				{Type: chat.PartText, Text: "List the files in this directory.", CacheControl: eph},
			}},
		}}
	schema := []byte(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`)
	for _, name := range []string{"Task", "Bash", "Glob", "Grep", "LS", "ExitPlanMode", "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch", "TodoWrite", "WebSearch",
		"mcp__kubernetes_cluster_management_server__list_pods_in_every_namespace_with_labels"} {
		req.Tools = append(req.Tools, chat.Tool{Name: name, Description: "The " + name + " tool.", Parameters: schema})
	}
	req.Tools[len(req.Tools)-1].CacheControl = eph
	return req
}

// TestClaudeCodeDefaults: Claude Code's default request translates, on every Claude model
// it runs on and on models of other families, into one Bedrock takes: the budget below
// maxTokens and maxTokens within the model's output, no temperature beside thinking, at
// most four cache points, tool names Bedrock takes and mapped back, only the betas the
// model takes; thinking, cache points and betas dropped off Claude.
func TestClaudeCodeDefaults(t *testing.T) {
	t.Parallel()
	for _, model := range []string{sonnet45, sonnet4ID, opus41Model, haiku45Model, sonnet46ID, opus47ID,
		"us.anthropic.claude-opus-5-5", "global.anthropic.claude-haiku-5-5", novaPro, gptOSSID} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			req := claudeCodeRequest(model)
			caps := capabilities.Lookup(model)
			out, plan, err := translate.Request(req, caps)
			require.NoError(t, err)
			body, err := json.Marshal(out)
			require.NoError(t, err)
			if plan.StreamOnly {
				require.NoError(t, bedrocksim.ValidateStreamJSON(model, body))
				require.NoError(t, checkConverse(model, body))
			} else {
				require.NoError(t, validateBody(model, body))
			}

			var fields struct {
				Thinking *struct {
					Type   string `json:"type"`
					Budget int32  `json:"budget_tokens"`
				} `json:"thinking"`
				Betas []string `json:"anthropic_beta"`
			}
			if len(out.AdditionalModelRequestFields) > 0 {
				require.NoError(t, json.Unmarshal(out.AdditionalModelRequestFields, &fields))
			}
			maxTokens := *out.InferenceConfig.MaxTokens
			if caps.MaxOutput > 0 {
				assert.LessOrEqual(t, maxTokens, caps.MaxOutput, "within the model's output")
			}
			assert.Nil(t, out.InferenceConfig.TopP)
			claude := strings.HasPrefix(caps.Family, "anthropic.")
			if claude {
				require.NotNil(t, fields.Thinking, "thinking stays on")
				assert.Nil(t, out.InferenceConfig.Temperature, "no temperature with thinking")
				assert.Contains(t, plan.Ignored, "temperature")
				if fields.Thinking.Type == chat.ThinkingEnabled {
					assert.Less(t, fields.Thinking.Budget, maxTokens, "G12")
				} else {
					assert.Equal(t, capabilities.ReasoningAdaptiveOnly, caps.Reasoning, "adaptive only where enabled is refused")
				}
			} else {
				assert.Nil(t, fields.Thinking)
				assert.Empty(t, fields.Betas)
				assert.Contains(t, plan.Ignored, "thinking")
			}
			for _, b := range fields.Betas {
				assert.True(t, capabilities.TakesBeta(caps, b), b)
			}
			assert.Contains(t, plan.Ignored, "anthropic-beta: claude-code-20250219")

			points := 0
			for _, s := range out.System {
				if s.CachePoint != nil {
					points++
				}
			}
			for _, m := range out.Messages {
				for _, b := range m.Content {
					if b.CachePoint != nil {
						points++
					}
				}
			}
			for _, tl := range out.ToolConfig.Tools {
				if tl.CachePoint != nil {
					points++
				}
			}
			assert.LessOrEqual(t, points, 4, "A22")
			if caps.CacheMinTokens == 0 {
				assert.Zero(t, points, "no cache points on a model without prompt caching")
			}

			long := req.Tools[len(req.Tools)-1].Name
			var mapped string
			for _, tl := range out.ToolConfig.Tools {
				if tl.ToolSpec == nil {
					continue
				}
				require.Regexp(t, bedrockName, tl.ToolSpec.Name)
				if plan.ToolName(tl.ToolSpec.Name) == long {
					mapped = tl.ToolSpec.Name
				}
			}
			require.NotEmpty(t, mapped, "the long MCP name maps to a Bedrock name and back")
			assert.NotEqual(t, long, mapped)
		})
	}
}

// TestClaudeCodeOpus41Budget: on Opus 4.1, whose output stops at 32,000 tokens, Claude
// Code's budget of 31,999 beside max_tokens 32,000 is sent within it, not as their sum.
func TestClaudeCodeOpus41Budget(t *testing.T) {
	t.Parallel()
	out, _, err := translate.Request(claudeCodeRequest(opus41Model), capabilities.Lookup(opus41Model))
	require.NoError(t, err)
	assert.Equal(t, int32(32000), *out.InferenceConfig.MaxTokens)
	assert.Contains(t, string(out.AdditionalModelRequestFields), `"budget_tokens":31999`)

	req := claudeCodeRequest(opus41Model)
	req.Thinking.BudgetTokens = ptr(int32(40000))
	out, _, err = translate.Request(req, capabilities.Lookup(opus41Model))
	require.NoError(t, err)
	assert.Equal(t, int32(32000), *out.InferenceConfig.MaxTokens)
	assert.Contains(t, string(out.AdditionalModelRequestFields), fmt.Sprintf(`"budget_tokens":%d`, 31999), "a budget above the output is lowered below it")
}

// TestThinkingTypeForModel: a thinking switch the model refuses is sent in the form it
// takes (BEDROCK.md G3 and the simulator's "adaptive on a budget-only model"): enabled on
// an adaptive-only model becomes adaptive without its budget, listed; adaptive on a
// budget-only model becomes enabled with the effort's budget, high without one.
func TestThinkingTypeForModel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, model string
		thinking    chat.Thinking
		effort      string
		fields      string
		ignored     []string
	}{
		{"enabled on Opus 4.7", opus47ID, chat.Thinking{Type: chat.ThinkingEnabled, BudgetTokens: ptr(int32(31999))}, "",
			`{"thinking":{"type":"adaptive"}}`, []string{"thinking.budget_tokens"}},
		{"adaptive on Sonnet 4", sonnet4ID, chat.Thinking{Type: chat.ThinkingAdaptive}, "",
			`{"thinking":{"type":"enabled","budget_tokens":16384}}`, nil},
		{"adaptive on Sonnet 4 with an effort", sonnet4ID, chat.Thinking{Type: chat.ThinkingAdaptive}, "low",
			`{"thinking":{"type":"enabled","budget_tokens":1024}}`, nil},
		{"enabled on Sonnet 4.6 as given", sonnet46ID, chat.Thinking{Type: chat.ThinkingEnabled, BudgetTokens: ptr(int32(2048))}, "",
			`{"thinking":{"type":"enabled","budget_tokens":2048}}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			th := tt.thinking
			req := &chat.Request{Model: tt.model, Messages: hello(), Thinking: &th, ReasoningEffort: tt.effort}
			out, plan, err := translate.Request(req, capabilities.Lookup(tt.model))
			require.NoError(t, err)
			assert.Equal(t, tt.fields, string(out.AdditionalModelRequestFields))
			assert.Equal(t, tt.ignored, plan.Ignored)
			body, err := json.Marshal(out)
			require.NoError(t, err)
			require.NoError(t, validateBody(tt.model, body))
		})
	}
}

// TestClaudeCode55Defaults: what Claude Code sends its 5.5 models (adaptive thinking with
// an effort, max_tokens 128,000) goes as it is, through ConverseStream (G12).
func TestClaudeCode55Defaults(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"us.anthropic.claude-opus-5-5", "eu.anthropic.claude-sonnet-5-5", "global.anthropic.claude-haiku-5-5"} {
		req := claudeCodeRequest(model)
		req.Thinking, req.ReasoningEffort, req.MaxTokens, req.Temperature = &chat.Thinking{Type: chat.ThinkingAdaptive}, "medium", ptr(int32(128000)), nil
		out, plan, err := translate.Request(req, capabilities.Lookup(model))
		require.NoError(t, err)
		assert.Equal(t, `{"thinking":{"type":"adaptive"},"output_config":{"effort":"medium"}}`, string(out.AdditionalModelRequestFields))
		assert.Equal(t, int32(128000), *out.InferenceConfig.MaxTokens)
		assert.True(t, plan.StreamOnly)
		body, err := json.Marshal(out)
		require.NoError(t, err)
		require.NoError(t, bedrocksim.ValidateStreamJSON(model, body))
	}
}
