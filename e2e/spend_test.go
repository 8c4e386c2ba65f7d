package e2e

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// Spend in dollars (docs/PROTOCOL.md 17): each call's cost on its access line and in
// gateway_cost_usd_total, and a key's dollar budget shared by replicas through Redis.

// anPostKey is anPost with key in x-api-key instead of testKey.
func anPostKey(t *testing.T, g started, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.HTTP+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Anthropic-Version", anthropicVersion)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// costOf is what the table's price of the access line's model makes of usage: the cost
// the line must carry. The line's own token counts must be usage's.
func costOf(t *testing.T, line map[string]any, usage chat.Usage) float64 {
	t.Helper()
	assert.EqualValues(t, usage.PromptTokens, line["input_tokens"])
	assert.EqualValues(t, usage.CompletionTokens, line["output_tokens"])
	assert.NotContains(t, line, "cache_read_tokens", "no cache tokens, which usage would have to hold")
	p, ok := pricing.New(nil).Lookup(line["model"].(string))
	require.True(t, ok, "the table prices %v", line["model"])
	require.Positive(t, p.Input)
	return p.Cost(usage)
}

// TestDollarBudgetAcrossReplicas: two gateways share one Redis. A key whose usd_per_day is
// a hundredth of a cent spends it with one call on replica one, on the OpenAI surface, and
// another key with one streamed call on the Anthropic surface; each call's access line and
// gateway_cost_usd_total carry its cost, the simulator's tokens at the table's price, and
// Redis holds it in micro-dollars in the day's and the month's counters. Replica two then
// refuses each key's next request before it reaches Bedrock, on every surface, naming
// usd_per_day, with Retry-After to UTC midnight, and counts the refusals in
// gateway_rate_limited_total.
func TestDollarBudgetAcrossReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redisClient(t, srv)
	clock := clocktest.New(at05)
	sim, one, two := limitedReplicas(t, srv.URL(), `keys:
  - {name: spend, key: spend-key-0123456789, usd_per_day: 0.0001}
  - {name: anth, key: anth-key-0123456789, usd_per_day: 0.0001, usd_per_month: 1000}
`, clock)
	day := strconv.FormatInt(at05.Truncate(24*time.Hour).Unix(), 10)
	month := strconv.FormatInt(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Unix(), 10)
	// 10:20:05.4 UTC: 13 h 39 min 54.6 s to midnight, 49,195 s rounded up.
	const retry = "49195"

	// The OpenAI surface spends key "spend"'s day on replica one.
	resp, c := oaChat(t, one, "spend-key-0123456789", helloParams)
	require.Zero(t, c.Usage.PromptTokensDetails.CachedTokens)
	line := accessLine(t, one.logs, resp.Header.Get("X-Request-Id"))
	cost := costOf(t, line, chat.Usage{PromptTokens: int32(c.Usage.PromptTokens), CompletionTokens: int32(c.Usage.CompletionTokens)})
	require.GreaterOrEqual(t, cost, 0.0001, "the simulator's answer must spend the budget")
	assert.InDelta(t, cost, line["cost_usd"], 1e-12, "the access line's cost")
	assert.Equal(t, "spend", line["key_id"])
	assert.InDelta(t, cost, metricValue(t, one, "gateway_cost_usd_total", map[string]string{"key": "spend", "model": testModel}), 1e-12)
	micros := pricing.Micros(cost)
	assert.Equal(t, micros, redisCount(t, rdb, "llmgw:lim:{spend}:usdd:"+day), "the day's counter, in micro-dollars")
	assert.Zero(t, redisCount(t, rdb, "llmgw:lim:{spend}:usdm:"+month), "no month's limit, no month's counter")

	// The Anthropic surface spends key "anth"'s day on replica one, streamed.
	resp, body := anPostKey(t, one, "anth-key-0123456789",
		`{"model":"claude-sonnet-4-20250514","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	m, _ := anStreamed(t, anEvents(t, body))
	line = accessLine(t, one.logs, resp.Header.Get("Request-Id"))
	assert.Equal(t, true, line["stream"])
	anCost := costOf(t, line, chat.Usage{PromptTokens: int32(m.Usage.InputTokens), CompletionTokens: int32(m.Usage.OutputTokens)})
	require.GreaterOrEqual(t, anCost, 0.0001)
	assert.InDelta(t, anCost, line["cost_usd"], 1e-12)
	assert.InDelta(t, anCost, metricValue(t, one, "gateway_cost_usd_total", map[string]string{"key": "anth", "model": line["model"].(string)}), 1e-12)
	anMicros := pricing.Micros(anCost)
	assert.Equal(t, anMicros, redisCount(t, rdb, "llmgw:lim:{anth}:usdd:"+day))
	assert.Equal(t, anMicros, redisCount(t, rdb, "llmgw:lim:{anth}:usdm:"+month))

	// Replica two refuses both keys, on every surface, before Bedrock.
	requests := sim.Requests()
	for _, k := range []struct{ name, key string }{{"spend", "spend-key-0123456789"}, {"anth", "anth-key-0123456789"}} {
		message := `key "` + k.name + `" is over its usd_per_day limit (0.0001 USD); retry in ` + retry + ` s`
		requireOpenAIRefusal(t, two, k.key, message, retry)
		resp, _ := oaRefusal(t, two, k.key, helloParams, http.StatusTooManyRequests)
		assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"), "a wait of hours: the SDKs do not retry")
		resp, body := anPostKey(t, two, k.key, `{"model":"claude-sonnet-4-20250514","max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`)
		e := anRefusal(t, resp, body, http.StatusTooManyRequests, "rate_limit_error")
		assert.Equal(t, message, e.Error.Message)
		assert.Equal(t, retry, resp.Header.Get("Retry-After"))
		requireNirmataRefusal(t, two, k.key, hello, message, "usd_per_day", retry)
		requireGRPCRefusal(t, two, k.key, hello, message, 49195*time.Second)
		assert.EqualValues(t, 2+1+3+2, metricValue(t, two, "gateway_rate_limited_total", map[string]string{"key": k.name, "limit": "usd_per_day"}))
	}
	assert.Equal(t, requests, sim.Requests(), "refusals cost no Bedrock call")
	assert.Equal(t, micros, redisCount(t, rdb, "llmgw:lim:{spend}:usdd:"+day), "nor dollars")
	assert.Zero(t, metricValue(t, two, "gateway_cost_usd_total", nil), "replica two spent nothing")

	// The next UTC day, the budget is back, on either replica.
	clock.Set(at05.Truncate(24 * time.Hour).Add(24 * time.Hour))
	_, c = oaChat(t, two, "spend-key-0123456789", helloParams)
	assert.Positive(t, c.Usage.CompletionTokens)
}
