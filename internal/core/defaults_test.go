package core

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// TestApplyDefaults: a request's own value wins, then its key's default, then its alias's,
// then the gateway's (docs/PROTOCOL.md 13, 14.1); for tool_validation, the most specific
// of the operator's levels that says off cannot be raised by the request.
func TestApplyDefaults(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	s := New(nil, Options{
		DefaultModel:        "agent",
		Aliases:             map[string][]route.Target{"agent": {{ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}}, "cached": {{ModelID: "us.amazon.nova-pro-v1:0"}}},
		NoParallelToolCalls: true,
		NoPromptCaching:     true,
		ToolValidation:      "off",
		AliasDefaults: map[string]AliasDefaults{
			"agent":  {PromptCaching: &no, Defaults: Defaults{ParallelToolCalls: &yes, MaxToolRounds: new(int32(5)), ReasoningEffort: "low", ToolValidation: "repair"}},
			"cached": {PromptCaching: &yes},
		},
		KeyDefaults: map[string]Defaults{
			"ci":   {ParallelToolCalls: &no, MaxToolRounds: new(int32(2)), ReasoningEffort: "high", ToolValidation: "off"},
			"half": {ToolValidation: "report"},
		},
	}, zap.NewNop())
	tests := []struct {
		name     string
		req      chat.Request
		want     chat.Request
		wantOpts translate.Options
		wantMode string
	}{
		{
			name:     "the alias's defaults beat the gateway's",
			req:      chat.Request{Model: "agent"},
			want:     chat.Request{Model: "agent", ParallelToolCalls: &yes, MaxToolRounds: new(int32(5))},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "low"},
			wantMode: "repair",
		},
		{
			name:     "the default model's alias",
			req:      chat.Request{},
			want:     chat.Request{ParallelToolCalls: &yes, MaxToolRounds: new(int32(5))},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "low"},
			wantMode: "repair",
		},
		{
			name:     "the request's own values win",
			req:      chat.Request{Model: "agent", ParallelToolCalls: &no, MaxToolRounds: new(int32(0)), ReasoningEffort: "high", ToolValidation: "report"},
			want:     chat.Request{Model: "agent", ParallelToolCalls: &no, MaxToolRounds: new(int32(0)), ReasoningEffort: "high", ToolValidation: "report"},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "low"}, // the translator takes the request's
			wantMode: "report",
		},
		{
			name:     "thinking set: the translator uses no default effort",
			req:      chat.Request{Model: "agent", Thinking: &chat.Thinking{Type: chat.ThinkingDisabled}},
			want:     chat.Request{Model: "agent", Thinking: &chat.Thinking{Type: chat.ThinkingDisabled}, ParallelToolCalls: &yes, MaxToolRounds: new(int32(5))},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "low"},
			wantMode: "repair",
		},
		{
			name:     "the key's defaults beat the alias's",
			req:      chat.Request{Model: "agent", KeyID: "ci"},
			want:     chat.Request{Model: "agent", KeyID: "ci", ParallelToolCalls: &no, MaxToolRounds: new(int32(2))},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "high"},
			wantMode: "off",
		},
		{
			name:     "a key without a default leaves the alias's",
			req:      chat.Request{Model: "agent", KeyID: "half"},
			want:     chat.Request{Model: "agent", KeyID: "half", ParallelToolCalls: &yes, MaxToolRounds: new(int32(5))},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "low"},
			wantMode: "report",
		},
		{
			name:     "the request's own values beat the key's, but not the key's tool_validation off",
			req:      chat.Request{Model: "agent", KeyID: "ci", ParallelToolCalls: &yes, MaxToolRounds: new(int32(9)), ToolValidation: "repair"},
			want:     chat.Request{Model: "agent", KeyID: "ci", ParallelToolCalls: &yes, MaxToolRounds: new(int32(9)), ToolValidation: "repair"},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "high"},
			wantMode: "off",
		},
		{
			name:     "a request may ask for repair where its key's default is report",
			req:      chat.Request{Model: "agent", KeyID: "half", ToolValidation: "repair"},
			want:     chat.Request{Model: "agent", KeyID: "half", ParallelToolCalls: &yes, MaxToolRounds: new(int32(5)), ToolValidation: "repair"},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "low"},
			wantMode: "repair",
		},
		{
			name:     "the key's report beats the gateway's off, so a request may raise it",
			req:      chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", KeyID: "half", ToolValidation: "repair"},
			want:     chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", KeyID: "half", ParallelToolCalls: &no, ToolValidation: "repair"},
			wantOpts: translate.Options{NoAutoCache: true},
			wantMode: "repair",
		},
		{
			name:     "the gateway's off cannot be raised by a request",
			req:      chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", ToolValidation: "report"},
			want:     chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", ParallelToolCalls: &no, ToolValidation: "report"},
			wantOpts: translate.Options{NoAutoCache: true},
			wantMode: "off",
		},
		{
			name:     "the alias's repair beats the gateway's off",
			req:      chat.Request{Model: "agent", ToolValidation: "report"},
			want:     chat.Request{Model: "agent", ParallelToolCalls: &yes, MaxToolRounds: new(int32(5)), ToolValidation: "report"},
			wantOpts: translate.Options{NoAutoCache: true, ReasoningEffort: "low"},
			wantMode: "report",
		},
		{
			name:     "the key's defaults beat the gateway's",
			req:      chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", KeyID: "half"},
			want:     chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", KeyID: "half", ParallelToolCalls: &no},
			wantOpts: translate.Options{NoAutoCache: true},
			wantMode: "report",
		},
		{
			name:     "an alias with prompt_caching auto on a gateway with it off",
			req:      chat.Request{Model: "cached"},
			want:     chat.Request{Model: "cached", ParallelToolCalls: &no},
			wantOpts: translate.Options{},
			wantMode: "off",
		},
		{
			name:     "a model id: the gateway's defaults",
			req:      chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0"},
			want:     chat.Request{Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", ParallelToolCalls: &no},
			wantOpts: translate.Options{NoAutoCache: true},
			wantMode: "off",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := tt.req
			opts, v, err := s.applyDefaults(&req, s.modelName(req.Model))
			assert.NoError(t, err)
			assert.Equal(t, tt.want, req)
			assert.Equal(t, tt.wantOpts, opts)
			assert.Equal(t, tt.wantMode, v.String())
			// Off is the operator's here whenever it is off (no request above asks for it),
			// so a request asking for repair does not turn checking back on.
			asking := tt.req
			asking.ToolValidation = chat.ValidationRepair
			_, v, err = s.applyDefaults(&asking, s.modelName(asking.Model))
			assert.NoError(t, err)
			if tt.wantMode == "off" {
				assert.Equal(t, "off", v.String(), "the operator's off is a ceiling")
			} else {
				assert.Equal(t, "repair", v.String(), "the request's own mode wins")
			}
		})
	}
	req := chat.Request{ToolValidation: "strict"}
	_, _, err := s.applyDefaults(&req, "agent")
	var re *fault.RequestError
	if assert.ErrorAs(t, err, &re) {
		assert.Equal(t, "tool_validation", re.Param)
		assert.Equal(t, `invalid request: tool_validation "strict" is not one of "off", "report", "repair"`, err.Error())
	}
	_, v, _ := New(nil, Options{}, zap.NewNop()).applyDefaults(&chat.Request{}, "m")
	assert.Equal(t, "report", v.String(), "the zero Options: report")
}

// TestIgnoredIsBounded: what a request lists as ignored is at most MaxIgnored names, in
// the header and in the answers' metadata alike: a client controls how many it causes.
func TestIgnoredIsBounded(t *testing.T) {
	t.Parallel()
	s := New(nil, Options{DefaultModel: "us.anthropic.claude-sonnet-4-20250514-v1:0", MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20}, zap.NewNop())
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
	for range 50 {
		req.Stop = append(req.Stop, " ") // blank: Claude refuses them, so each is dropped and listed
	}
	var res Result
	_, err := s.prepared(t.Context(), req, &res)
	assert.NoError(t, err)
	assert.Len(t, res.Ignored, MaxIgnored)
}

// prepared runs the first part of a turn's admission (prepare): what begins a turn up to
// its key's admission, without a concurrency slot or a deadline. res gets its Result.
func (s *Service) prepared(ctx context.Context, req *chat.Request, res *Result) (*turn, error) {
	t := &turn{id: req.ID, ctx: ctx, req: req}
	err := s.prepare(t)
	*res = t.res
	return t, err
}
