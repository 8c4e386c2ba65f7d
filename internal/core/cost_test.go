package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/route"
)

// TestCostOfEveryCall: a request's cost is the sum over the Bedrock calls it made, each
// priced at the model that answered it: the failover attempt that was throttled costs
// nothing; the target that answered and the repair attempt it made each cost their usage,
// cache reads and writes at their own prices, at that target's price, not the first
// target's. A model without a price costs 0, which the log says once.
func TestCostOfEveryCall(t *testing.T) {
	t.Parallel()
	const nova = "us.amazon.nova-pro-v1:0"
	first := answer("1", "", "Saving.", invalidCall)
	first.Usage = &bedrock.TokenUsage{InputTokens: 100, OutputTokens: 10, CacheReadInputTokens: 1000, CacheWriteInputTokens: 200}
	u := &scripted{answers: []any{
		&bedrock.APIError{Code: "ThrottlingException", Message: "slow down", StatusCode: 429},
		first,
		answer("2", "", "Retrying.", validCall), // 100 in, 10 out
		answer("3", "", "Hello."),
		answer("4", "", "Hello again."),
	}}
	logCore, logs := observer.New(zap.InfoLevel)
	s := New(u, Options{
		Aliases:  map[string][]route.Target{"agent": {{ModelID: nova}, {ModelID: modelNoStrict}}},
		MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20, UpstreamTimeout: time.Minute, MaxConcurrent: 4,
		NoPromptCaching: true, ToolValidation: "repair", MaxRepairAttempts: 2,
		Prices: pricing.New(map[string]pricing.Price{
			"anthropic.claude-sonnet-4-20250514-v1:0": {Input: 2, Output: 10, CacheRead: 0.2, CacheWrite: 2.5},
			"amazon.nova-pro-v1:0":                    {Input: 1000, Output: 1000},
		}),
	}, zap.New(logCore))

	req := policyRequest(false)
	req.Model = "agent"
	_, res, err := s.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, u.reqs, 3, "the throttled attempt, the answer, one repair attempt")
	assert.Equal(t, modelNoStrict, res.Model)
	assert.Equal(t, 1, res.RepairAttempts)
	answered := 100*2 + 10*10 + 1000*0.2 + 200*2.5
	repaired := 100*2 + 10*10.0
	assert.InDelta(t, (answered+repaired)/1e6, res.CostUSD, 1e-12)

	for range 2 {
		_, res, err = s.Chat(t.Context(), &chat.Request{Model: "us.deepseek.v3-v1:0",
			Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}})
		require.NoError(t, err)
		assert.Zero(t, res.CostUSD, "no price: no cost")
	}
	missing := logs.FilterMessage("model has no price, so its calls cost 0; give it one under prices").All()
	require.Len(t, missing, 1, "said once")
	assert.Equal(t, "us.deepseek.v3-v1:0", missing[0].ContextMap()["model"])
}
