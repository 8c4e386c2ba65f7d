package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/reasoning"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/toolguard"
)

// scripted is an upstream that answers Converse calls from a script, in order, and keeps
// the requests it got.
type scripted struct {
	mu      sync.Mutex
	answers []any // *bedrock.ConverseResponse or error
	reqs    []*bedrock.ConverseRequest
}

func (u *scripted) Converse(_ context.Context, _ string, req *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reqs = append(u.reqs, req)
	if len(u.answers) == 0 {
		return nil, errors.New("the script ran out")
	}
	a := u.answers[0]
	u.answers = u.answers[1:]
	if err, ok := a.(error); ok {
		return nil, err
	}
	return a.(*bedrock.ConverseResponse), nil
}

func (u *scripted) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	return nil, errors.New("not scripted")
}

// answer is a Converse answer: reasoning (when thought is set), text, then calls
// {name, input} with ids tooluse_<turn>_<n>.
func answer(turn, thought, text string, calls ...[2]string) *bedrock.ConverseResponse {
	msg := &bedrock.Message{Role: bedrock.RoleAssistant}
	if thought != "" {
		msg.Content = append(msg.Content, bedrock.ContentBlock{ReasoningContent: &bedrock.ReasoningContentBlock{
			ReasoningText: &bedrock.ReasoningText{Text: thought, Signature: "sig-" + turn}}})
	}
	if text != "" {
		msg.Content = append(msg.Content, bedrock.TextBlock(text))
	}
	stop := "end_turn"
	for i, c := range calls {
		stop = "tool_use"
		msg.Content = append(msg.Content, bedrock.ContentBlock{ToolUse: &bedrock.ToolUseBlock{
			ToolUseID: "tooluse_" + turn + "_" + string(rune('a'+i)), Name: c[0], Input: jsontext.Value(c[1])}})
	}
	return &bedrock.ConverseResponse{Output: &bedrock.ConverseOutput{Message: msg}, StopReason: stop,
		Usage: &bedrock.TokenUsage{InputTokens: 100, OutputTokens: 10, TotalTokens: 110}}
}

const (
	modelNoStrict = "us.anthropic.claude-sonnet-4-20250514-v1:0"   // no native strict tools
	modelStrict   = "us.anthropic.claude-sonnet-4-5-20250929-v1:0" // toolSpec.strict
	policySchema  = `{"type":"object","properties":{"filename":{"type":"string"},"replicas":{"type":"integer"}},"required":["filename"]}`
)

func repairService(t *testing.T, u route.Upstream, mode string, attempts int) (*Service, *metrics.Metrics, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	m := metrics.New()
	return New(u, Options{
		DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 4, Metrics: m, NoPromptCaching: true,
		ToolValidation: mode, MaxRepairAttempts: attempts,
		ReasoningCache: reasoning.Options{MaxEntries: 10, MaxBytes: 1 << 20, TTL: time.Hour},
	}, zap.New(core)), m, logs
}

func policyRequest(strict bool) *chat.Request {
	return &chat.Request{ID: "req-1", Messages: []chat.Message{{Role: chat.RoleUser, Content: "save p.yaml with 3 replicas"}},
		Tools: []chat.Tool{
			{Type: "function", Name: "save_policy", Parameters: []byte(policySchema), Wrapped: true, Strict: strict},
			{Type: "function", Name: "list_policies", Wrapped: true},
		}}
}

var (
	invalidCall = [2]string{"save_policy", `{"replicas":"3"}`}
	validCall   = [2]string{"save_policy", `{"filename":"p.yaml","replicas":3}`}
	listCall    = [2]string{"list_policies", `{}`}
)

// TestReportMode: invalid calls come back unchanged, each with its violations; one
// Bedrock call.
func TestReportMode(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{answer("1", "", "Saving.", invalidCall, listCall, [2]string{"delete_policy", `{}`})}}
	s, _, _ := repairService(t, u, "", 2)
	resp, res, err := s.Chat(t.Context(), policyRequest(false))
	require.NoError(t, err)
	require.Len(t, u.reqs, 1)
	require.Len(t, resp.ToolCalls, 3)
	assert.Equal(t, `{"replicas":"3"}`, resp.ToolCalls[0].Arguments, "unchanged")
	assert.Equal(t, []string{`/: missing required property "filename"`, `/replicas: expected integer, got string`}, resp.ToolCalls[0].ValidationErrors)
	assert.Nil(t, resp.ToolCalls[1].ValidationErrors)
	assert.Equal(t, []string{`/: there is no tool named "delete_policy" in tools`}, resp.ToolCalls[2].ValidationErrors)
	assert.Equal(t, toolguard.Invalid, resp.ToolValidation)
	assert.Equal(t, toolguard.Invalid, res.ToolValidation)
	assert.Equal(t, toolguard.Outcomes{Valid: 1, Invalid: 2}, res.ToolOutcomes)
	assert.Zero(t, res.RepairAttempts)
}

// TestRepairMode: the first answer's invalid call is repaired by a second model call; the
// client gets the first answer's reasoning and text with the second's calls, and the
// usage of both.
func TestRepairMode(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{
		answer("1", "The user wants a policy.", "Saving the policy.", invalidCall, listCall),
		answer("2", "Fixing it.", "Retrying.", validCall, listCall),
	}}
	s, _, logs := repairService(t, u, "repair", 2)
	resp, res, err := s.Chat(t.Context(), policyRequest(false))
	require.NoError(t, err)
	require.Len(t, u.reqs, 2)
	assert.Equal(t, "Saving the policy.", resp.Text)
	require.Len(t, resp.Reasoning, 1)
	assert.Equal(t, "The user wants a policy.", resp.Reasoning[0].Text)
	require.Len(t, resp.ToolCalls, 2)
	assert.Equal(t, "tooluse_2_a", resp.ToolCalls[0].ID)
	assert.Equal(t, validCall[1], resp.ToolCalls[0].Arguments)
	assert.Nil(t, resp.ToolCalls[0].ValidationErrors)
	assert.Equal(t, chat.FinishToolCalls, resp.Finish)
	assert.Equal(t, chat.Usage{PromptTokens: 200, CompletionTokens: 20, TotalTokens: 220}, resp.Usage)
	assert.Equal(t, toolguard.Repaired, resp.ToolValidation)
	assert.Equal(t, toolguard.Outcomes{Repaired: 2}, res.ToolOutcomes)
	assert.Equal(t, 1, res.RepairAttempts)

	// Attempt 2: the original request, the model's turn verbatim, an error result per call.
	second := u.reqs[1]
	require.Len(t, second.Messages, 3)
	assert.Equal(t, u.reqs[0].Messages[0], second.Messages[0])
	turn, err := bedrock.MarshalRequest(&bedrock.ConverseRequest{Messages: second.Messages[1:]})
	require.NoError(t, err)
	assert.Equal(t, `{"messages":[`+
		`{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"The user wants a policy.","signature":"sig-1"}}},{"text":"Saving the policy."},`+
		`{"toolUse":{"toolUseId":"tooluse_1_a","name":"save_policy","input":{"replicas":"3"}}},{"toolUse":{"toolUseId":"tooluse_1_b","name":"list_policies","input":{}}}]},`+
		`{"role":"user","content":[`+
		`{"toolResult":{"toolUseId":"tooluse_1_a","content":[{"text":"Invalid arguments for save_policy: /: missing required property \"filename\"; /replicas: expected integer, got string. Call save_policy again with corrected arguments."}],"status":"error"}},`+
		`{"toolResult":{"toolUseId":"tooluse_1_b","content":[{"text":"Not run: other calls in this turn had invalid arguments. Repeat this call if it is still needed."}],"status":"error"}}]}]}`,
		string(turn))
	assert.Equal(t, u.reqs[0].ToolConfig, second.ToolConfig)

	// The log says what was repaired, never with what arguments.
	entries := logs.FilterMessage("repairing tool calls").All()
	require.Len(t, entries, 1)
	fields := entries[0].ContextMap()
	assert.EqualValues(t, 1, fields["invalid_tool_calls"])
	assert.Equal(t, []any{"save_policy"}, fields["tools"])
	for _, e := range logs.All() {
		for _, v := range e.ContextMap() {
			assert.NotContains(t, fmt.Sprint(v), `"3"`, "no argument value is logged")
		}
	}

	assert.Equal(t, toolguard.Outcomes{Repaired: 2}, res.ToolOutcomes, "what the call's observation counts")
	assert.Equal(t, 1, res.RepairAttempts)
}

// TestRepairReasoningCache: the reasoning cache keeps the first answer's blocks under the
// ids of the calls the client received.
func TestRepairReasoningCache(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{
		answer("1", "First thought.", "", invalidCall),
		answer("2", "Second thought.", "", validCall),
	}}
	s, _, _ := repairService(t, u, "repair", 2)
	req := policyRequest(false)
	req.ReasoningEffort = "low"
	resp, _, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	next, ok := s.reasoning.Restore(t.Context(), &chat.Request{Messages: []chat.Message{
		{Role: chat.RoleUser, Content: "q"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "tooluse_2_a", Name: "get", Arguments: "{}"}}},
		{Role: chat.RoleTool, ToolCallID: "tooluse_2_a", Content: "21"},
	}}, modelNoStrict)
	require.True(t, ok, "the repaired call's turn gets the first answer's reasoning back")
	assert.Equal(t, []chat.ReasoningBlock{{Text: "First thought.", Signature: "sig-1"}}, next.Messages[1].Reasoning)
}

// TestRepairRunsOut: still invalid after max_repair_attempts, the last invalid calls go
// back with their violations; each attempt carries only the latest turn.
func TestRepairRunsOut(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{
		answer("1", "", "a", invalidCall),
		answer("2", "", "b", [2]string{"save_policy", `{"filename":7}`}),
		answer("3", "", "c", [2]string{"save_policy", `{}`}),
	}}
	s, _, _ := repairService(t, u, "repair", 2)
	resp, res, err := s.Chat(t.Context(), policyRequest(false))
	require.NoError(t, err)
	require.Len(t, u.reqs, 3)
	require.Len(t, u.reqs[2].Messages, 3, "attempt 3: the original request and attempt 2's turn only")
	assert.Equal(t, "tooluse_2_a", u.reqs[2].Messages[1].Content[1].ToolUse.ToolUseID)
	assert.Equal(t, "a", resp.Text)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, "tooluse_3_a", resp.ToolCalls[0].ID)
	assert.Equal(t, []string{`/: missing required property "filename"`}, resp.ToolCalls[0].ValidationErrors)
	assert.Equal(t, chat.FinishToolCalls, resp.Finish)
	assert.Equal(t, toolguard.Invalid, resp.ToolValidation)
	assert.Equal(t, toolguard.Outcomes{Unrepaired: 1}, res.ToolOutcomes)
	assert.Equal(t, 2, res.RepairAttempts)
	assert.EqualValues(t, 330, resp.Usage.TotalTokens)
}

// TestRepairEndsEarly: an attempt that fails upstream, or calls no tool, ends the repair:
// the last invalid calls go back, finish reason tool_calls, never an error or a silent
// invalid call.
func TestRepairEndsEarly(t *testing.T) {
	t.Parallel()
	for name, second := range map[string]any{
		"fails upstream": &bedrock.APIError{Code: "InternalServerException", Message: "boom"},
		"calls no tool":  answer("2", "", "I give up."),
	} {
		u := &scripted{answers: []any{answer("1", "", "Saving.", invalidCall), second}}
		s, _, _ := repairService(t, u, "repair", 2)
		resp, res, err := s.Chat(t.Context(), policyRequest(false))
		require.NoError(t, err, name)
		require.Len(t, u.reqs, 2, name)
		require.Len(t, resp.ToolCalls, 1, name)
		assert.Equal(t, "tooluse_1_a", resp.ToolCalls[0].ID, name)
		assert.NotEmpty(t, resp.ToolCalls[0].ValidationErrors, name)
		assert.Equal(t, chat.FinishToolCalls, resp.Finish, name)
		assert.Equal(t, "Saving.", resp.Text, name)
		assert.Equal(t, toolguard.Invalid, res.ToolValidation, name)
		assert.Equal(t, 1, res.RepairAttempts, name)
	}
}

// TestStrictToolRepairedWithoutNativeStrict: on a model without toolSpec.strict, a strict
// tool's calls are repaired whatever the request's tool_validation says, its own off
// included; a valid answer is one call.
func TestStrictToolRepairedWithoutNativeStrict(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{answer("1", "", "", invalidCall), answer("2", "", "", validCall)}}
	s, _, _ := repairService(t, u, "report", 2)
	req := policyRequest(true)
	req.ToolValidation = "off"
	resp, res, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, u.reqs, 2)
	assert.False(t, u.reqs[0].ToolConfig.Tools[0].ToolSpec.Strict, "not sent to a model without it")
	assert.Equal(t, validCall[1], resp.ToolCalls[0].Arguments)
	assert.Equal(t, toolguard.Repaired, res.ToolValidation)
	assert.False(t, res.StrictUnenforced)

	// On a model with native strict tool use, strict goes to Bedrock and nothing is checked
	// in mode off.
	u = &scripted{answers: []any{answer("1", "", "", invalidCall)}}
	s, _, _ = repairService(t, u, "off", 2)
	req = policyRequest(true)
	req.Model = modelStrict
	resp, res, err = s.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, u.reqs, 1)
	assert.True(t, u.reqs[0].ToolConfig.Tools[0].ToolSpec.Strict)
	assert.Nil(t, resp.ToolCalls[0].ValidationErrors)
	assert.Equal(t, toolguard.Outcomes{Unchecked: 1}, res.ToolOutcomes)
	assert.False(t, res.Validating)
}

// TestOperatorOffLeavesStrictUnenforced: when the operator turned tool_validation off, a
// request cannot turn it back on, and a strict tool on a model without native strict tool
// use is not repaired: its call comes back as the model wrote it, and the Result says the
// tool's strictness was not enforced. A model with native strict tools enforces it itself.
func TestOperatorOffLeavesStrictUnenforced(t *testing.T) {
	t.Parallel()
	for _, asked := range []string{"", "report", "repair"} {
		u := &scripted{answers: []any{answer("1", "", "", invalidCall)}}
		s, _, _ := repairService(t, u, "off", 2)
		req := policyRequest(true)
		req.ToolValidation = asked
		resp, res, err := s.Chat(t.Context(), req)
		require.NoError(t, err, asked)
		require.Len(t, u.reqs, 1, "%q: no repair", asked)
		assert.Equal(t, invalidCall[1], resp.ToolCalls[0].Arguments, asked)
		assert.Nil(t, resp.ToolCalls[0].ValidationErrors, asked)
		assert.Equal(t, toolguard.Outcomes{Unchecked: 1}, res.ToolOutcomes, asked)
		assert.True(t, res.StrictUnenforced, asked)
		assert.False(t, res.Validating, "%q: a stream streams the call as it comes", asked)
	}

	u := &scripted{answers: []any{answer("1", "", "", validCall)}}
	s, _, _ := repairService(t, u, "off", 2)
	req := policyRequest(true)
	req.Model = modelStrict
	_, res, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	assert.False(t, res.StrictUnenforced, "Bedrock holds the calls to the schema")
	u = &scripted{answers: []any{answer("1", "", "", validCall)}}
	s, _, _ = repairService(t, u, "off", 2)
	_, res, err = s.Chat(t.Context(), policyRequest(false))
	require.NoError(t, err)
	assert.False(t, res.StrictUnenforced, "no strict tool")
}

// TestOffMode: nothing is checked, nothing is said.
func TestOffMode(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{answer("1", "", "", invalidCall)}}
	s, _, _ := repairService(t, u, "off", 2)
	req := policyRequest(false)
	resp, res, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	assert.Nil(t, resp.ToolCalls[0].ValidationErrors)
	assert.Empty(t, res.ToolValidation)
	assert.Equal(t, toolguard.Outcomes{Unchecked: 1}, res.ToolOutcomes)

	req.ToolValidation = "bogus"
	_, _, err = s.Chat(t.Context(), req)
	assert.EqualError(t, err, `invalid request: tool_validation "bogus" is not one of "off", "report", "repair"`)
}

// counter sums the series of a metric family whose labels include want.
func counter(t *testing.T, m *metrics.Metrics, name string, want map[string]string) float64 {
	t.Helper()
	families, err := m.Gatherer().Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			for k, v := range want {
				found := false
				for _, l := range s.GetLabel() {
					found = found || l.GetName() == k && l.GetValue() == v
				}
				if !found {
					continue series
				}
			}
			sum += s.GetCounter().GetValue()
		}
	}
	return sum
}

// fixedUpstream answers every Converse call with the same answer.
type fixedUpstream struct{ answer *bedrock.ConverseResponse }

func (u fixedUpstream) Converse(context.Context, string, *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	return u.answer, nil
}

func (fixedUpstream) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	return nil, errors.New("not scripted")
}

// BenchmarkChatToolValidation is a whole unary call whose answer holds two tool calls, with
// tool_validation off and report: the difference is what checking costs a request once its
// tool's schema is cached.
func BenchmarkChatToolValidation(b *testing.B) {
	up := fixedUpstream{answer("1", "", "Saving.", validCall, listCall)}
	for _, mode := range []string{"off", "report"} {
		b.Run(mode, func(b *testing.B) {
			s := New(up, Options{DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
				UpstreamTimeout: time.Minute, MaxConcurrent: 4, NoPromptCaching: true, ToolValidation: mode}, zap.NewNop())
			b.ReportAllocs()
			for b.Loop() {
				resp, _, err := s.Chat(b.Context(), policyRequest(false))
				if err != nil || len(resp.ToolCalls) != 2 {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRepairKeepsNames: a tool whose name Bedrock cannot take is called under its Bedrock
// name in every attempt and comes back under the client's; the repair turn speaks
// Bedrock's names, which the model knows.
func TestRepairKeepsNames(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{
		answer("1", "", "", [2]string{"fs_save_policy", `{}`}),
		answer("2", "", "", [2]string{"fs_save_policy", `{"filename":"a"}`}),
	}}
	s, _, _ := repairService(t, u, "repair", 2)
	req := policyRequest(false)
	req.Tools[0].Name = "fs.save_policy"
	resp, _, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, "fs.save_policy", resp.ToolCalls[0].Name)
	assert.Equal(t, toolguard.Repaired, resp.ToolValidation)
	result := u.reqs[1].Messages[2].Content[0].ToolResult
	assert.Equal(t, `Invalid arguments for fs_save_policy: /: missing required property "filename". Call fs_save_policy again with corrected arguments.`, *result.Content[0].Text)
}

// TestRepairAfterDrops: calls 13.4 dropped are not checked, and in a repair turn they are
// told they were not run; the results follow the turn's blocks by id.
func TestRepairAfterDrops(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{
		answer("1", "", "", invalidCall, [2]string{"save_policy", `{}`}),
		answer("2", "", "", validCall),
	}}
	s, _, _ := repairService(t, u, "repair", 2)
	req := policyRequest(false)
	req.ParallelToolCalls = new(false)
	resp, res, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, u.reqs, 2)
	results := u.reqs[1].Messages[2].Content
	require.Len(t, results, 2)
	assert.Contains(t, *results[0].ToolResult.Content[0].Text, "Invalid arguments for save_policy")
	assert.Equal(t, "tooluse_1_b", results[1].ToolResult.ToolUseID)
	assert.Equal(t, "Not run: other calls in this turn had invalid arguments. Repeat this call if it is still needed.", *results[1].ToolResult.Content[0].Text)
	assert.Equal(t, toolguard.Repaired, res.ToolValidation)
	require.Len(t, resp.ToolCalls, 1)

	// The dropped call is invalid, the kept one valid: nothing to repair.
	u = &scripted{answers: []any{answer("1", "", "", validCall, invalidCall)}}
	s, _, _ = repairService(t, u, "repair", 2)
	resp, res, err = s.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, u.reqs, 1)
	assert.Equal(t, 1, resp.DroppedToolCalls)
	assert.Equal(t, toolguard.Outcomes{Valid: 1}, res.ToolOutcomes)
}
