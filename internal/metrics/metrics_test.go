package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	model1 = "anthropic.claude-3-5-sonnet"
	client = "kyverno"
)

// Each method moves exactly the series it documents.
func TestMethods(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		record func(m *Metrics)
		check  func(t *testing.T, m *Metrics)
	}{
		{
			name: "Request",
			record: func(m *Metrics) {
				m.Request(TransportREST, RouteChat, "ok", model1, client, 1500*time.Millisecond)
				m.Request(TransportREST, RouteChat, "ok", model1, client, 500*time.Millisecond)
				m.Request(TransportGRPC, RouteChat, "invalid_argument", model1, "", time.Millisecond)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 2.0, testutil.ToFloat64(m.requests.WithLabelValues(TransportREST, RouteChat, "ok", model1, client)))
				assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(TransportGRPC, RouteChat, "invalid_argument", model1, LabelNone)))
				assert.Equal(t, 2, testutil.CollectAndCount(m.requests))
				count, sum := histogram(t, m, "gateway_request_duration_seconds", "transport", TransportREST, "route", RouteChat, "model", model1, "client_type", client)
				assert.Equal(t, uint64(2), count)
				assert.InDelta(t, 2.0, sum, 1e-9)
				assert.Equal(t, 2, testutil.CollectAndCount(m.requestDuration))
			},
		},
		{
			name:   "FirstEvent",
			record: func(m *Metrics) { m.FirstEvent(model1, client, 250*time.Millisecond) },
			check: func(t *testing.T, m *Metrics) {
				count, sum := histogram(t, m, "gateway_stream_first_event_seconds", "model", model1, "client_type", client)
				assert.Equal(t, uint64(1), count)
				assert.InDelta(t, 0.25, sum, 1e-9)
			},
		},
		{
			name: "UpstreamError",
			record: func(m *Metrics) {
				m.Configure(Configured{Models: []string{model1}})
				m.UpstreamError(model1, "ThrottlingException")
				m.UpstreamError(model1, UpstreamTransport)
				m.UpstreamError(model1, UpstreamTransport)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 1.0, testutil.ToFloat64(m.upstreamErrors.WithLabelValues(model1, "ThrottlingException")))
				assert.Equal(t, 2.0, testutil.ToFloat64(m.upstreamErrors.WithLabelValues(model1, "transport")))
			},
		},
		{
			name: "Tokens",
			record: func(m *Metrics) {
				m.Tokens(model1, client, 100, 20)
				m.Tokens(model1, client, 5, 0)
				m.Tokens(model1, client, 0, 0)
				m.Tokens(model1, client, -3, -1)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 105.0, testutil.ToFloat64(m.tokens.WithLabelValues(model1, client, "input")))
				assert.Equal(t, 20.0, testutil.ToFloat64(m.tokens.WithLabelValues(model1, client, "output")))
			},
		},
		{
			name: "ToolCalls",
			record: func(m *Metrics) {
				m.ToolCalls(model1, client, ToolValid, 3)
				m.ToolCalls(model1, client, ToolRepaired, 1)
				m.ToolCalls(model1, "other-client", ToolInvalid, 0)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 2, testutil.CollectAndCount(m.toolCalls), "zero creates no series")
				assert.Equal(t, 3.0, testutil.ToFloat64(m.toolCalls.WithLabelValues(model1, client, ToolValid)))
				assert.Equal(t, 1.0, testutil.ToFloat64(m.toolCalls.WithLabelValues(model1, client, ToolRepaired)))
			},
		},
		{
			name: "RepairAttempts",
			record: func(m *Metrics) {
				m.RepairAttempts(model1, 2)
				m.RepairAttempts(model1, 0)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 2.0, testutil.ToFloat64(m.repairAttempts.WithLabelValues(model1)))
			},
		},
		{
			name: "Repairs",
			record: func(m *Metrics) {
				m.Configure(Configured{Models: []string{model1}})
				m.Repairs(model1, 2, 0)
				m.Repairs(model1, 1, 4)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 3.0, testutil.ToFloat64(m.synthesized.WithLabelValues(model1)))
				assert.Equal(t, 4.0, testutil.ToFloat64(m.orphans.WithLabelValues(model1)))
			},
		},
		{
			name: "StreamOpened",
			record: func(m *Metrics) {
				done := m.StreamOpened(client)
				m.StreamOpened(client)
				done()
				done() // idempotent
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 1.0, testutil.ToFloat64(m.openStreams.WithLabelValues(client)))
			},
		},
		{
			name:   "Retry",
			record: func(m *Metrics) { m.Configure(Configured{Models: []string{model1}}); m.Retry(model1); m.Retry(model1) },
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 2.0, testutil.ToFloat64(m.retries.WithLabelValues(model1)))
			},
		},
		{
			name: "Inflight",
			record: func(m *Metrics) {
				m.Inflight(1)
				m.Inflight(1)
				m.Inflight(1)
				m.Inflight(-1)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 2.0, testutil.ToFloat64(m.inflight))
				assert.Zero(t, testutil.ToFloat64(m.upstreamCalls), "requests are not upstream calls")
			},
		},
		{
			name: "UpstreamCall",
			record: func(m *Metrics) {
				done := m.UpstreamCall()
				m.UpstreamCall()
				done()
				done() // idempotent
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 1.0, testutil.ToFloat64(m.upstreamCalls))
				assert.Zero(t, testutil.ToFloat64(m.inflight), "upstream calls are not requests")
			},
		},
		{
			name: "Failover",
			record: func(m *Metrics) {
				m.Failover("agent", "ThrottlingException")
				m.Failover("agent", "ThrottlingException")
				m.Failover("agent", "InternalServerException")
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 2.0, testutil.ToFloat64(m.failovers.WithLabelValues("agent", "ThrottlingException")))
				assert.Equal(t, 1.0, testutil.ToFloat64(m.failovers.WithLabelValues("agent", "InternalServerException")))
			},
		},
		{
			name: "Rejected",
			record: func(m *Metrics) {
				m.Rejected(RejectOverloaded)
				m.Rejected(RejectTooLarge)
				m.Rejected(RejectTooLarge)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 1.0, testutil.ToFloat64(m.rejected.WithLabelValues(RejectOverloaded)))
				assert.Equal(t, 2.0, testutil.ToFloat64(m.rejected.WithLabelValues(RejectTooLarge)))
				assert.Equal(t, 0.0, testutil.ToFloat64(m.rejected.WithLabelValues(RejectDraining)))
				assert.Equal(t, 4, testutil.CollectAndCount(m.rejected), "known reasons exist from the start")
			},
		},
		{
			name: "RateLimited",
			record: func(m *Metrics) {
				m.KeyLimit("ci", "tokens_per_day")
				m.RateLimited("ci", "requests_per_minute")
				m.RateLimited("ci", "requests_per_minute")
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 2.0, testutil.ToFloat64(m.rateLimited.WithLabelValues("ci", "requests_per_minute")))
				assert.Equal(t, 2, testutil.CollectAndCount(m.rateLimited), "a configured limit has its series at zero")
			},
		},
		{
			name: "Cost",
			record: func(m *Metrics) {
				m.Cost("ci", model1, 0.25)
				m.Cost("ci", model1, 0.5)
				m.Cost("", model1, 1)
				m.Cost("ci", "us.amazon.nova-pro-v1:0", 0) // no cost: no series
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 0.75, testutil.ToFloat64(m.cost.WithLabelValues("ci", model1)))
				assert.Equal(t, 1.0, testutil.ToFloat64(m.cost.WithLabelValues(LabelNone, model1)), "no key: none")
				assert.Equal(t, 2, testutil.CollectAndCount(m.cost))
			},
		},
		{
			name: "StoreError",
			record: func(m *Metrics) {
				m.StoreError(StoreIncr)
				m.StoreError(StoreGet)
				m.StoreError(StoreGet)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 1.0, testutil.ToFloat64(m.storeErrors.WithLabelValues(StoreIncr)))
				assert.Equal(t, 2.0, testutil.ToFloat64(m.storeErrors.WithLabelValues(StoreGet)))
				assert.Equal(t, 0.0, testutil.ToFloat64(m.storeErrors.WithLabelValues(StorePut)))
				assert.Equal(t, 5, testutil.CollectAndCount(m.storeErrors), "known operations exist from the start")
			},
		},
		{
			name: "StoreUp",
			record: func(m *Metrics) {
				assert.Equal(t, 1.0, testutil.ToFloat64(m.storeUp), "the in-process store is up")
				m.StoreUp(false)
				assert.Equal(t, 0.0, testutil.ToFloat64(m.storeUp))
				m.StoreUp(true)
			},
			check: func(t *testing.T, m *Metrics) {
				assert.Equal(t, 1.0, testutil.ToFloat64(m.storeUp))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := New()
			tt.record(m)
			tt.check(t, m)
		})
	}
}

// The exposition as a scraper sees it, for a few families, byte for byte.
func TestGatherAndCompare(t *testing.T) {
	t.Parallel()
	m := New()
	m.Request(TransportREST, RouteChatStream, "ok", model1, client, time.Second)
	m.Tokens(model1, client, 12, 34)
	m.CacheTokens(model1, 1000, 0)
	m.CacheTokens(model1, 0, 200)
	m.CacheTokens(model1, 0, 0)
	m.UpstreamError("", "ThrottlingException")
	m.ResponseFormatInvalid(model1)
	m.KeyLimit("a1b2c3d4", "requests_per_minute")
	m.RateLimited("ci", "tokens_per_minute")
	m.StoreError(StorePut)
	m.StoreUp(false)
	m.Failover("agent", "ThrottlingException")
	m.Thinking(model1, "disabled-failover")
	want := `
# HELP gateway_cache_read_tokens_total Prompt tokens of successful answers read from Bedrock's prompt cache (billed at about a tenth of input); part of gateway_tokens_total's input.
# TYPE gateway_cache_read_tokens_total counter
gateway_cache_read_tokens_total{model="anthropic.claude-3-5-sonnet"} 1000
# HELP gateway_cache_write_tokens_total Prompt tokens of successful answers written to Bedrock's prompt cache; part of gateway_tokens_total's input.
# TYPE gateway_cache_write_tokens_total counter
gateway_cache_write_tokens_total{model="anthropic.claude-3-5-sonnet"} 200
# HELP gateway_rate_limited_total Requests refused because their key was over one of its limits, by key (its configured name, else the first 8 hex digits of its SHA-256) and limit ("requests_per_minute", "tokens_per_minute", "tokens_per_day", "usd_per_day", "usd_per_month").
# TYPE gateway_rate_limited_total counter
gateway_rate_limited_total{key="a1b2c3d4",limit="requests_per_minute"} 0
gateway_rate_limited_total{key="ci",limit="tokens_per_minute"} 1
# HELP gateway_failovers_total Calls to an alias that moved on to its next target before any byte of the answer reached the client, by alias and reason: the error code of the target that failed, once the SDK's retries were spent ("ThrottlingException", "ServiceQuotaExceededException", "ServiceUnavailableException", "ModelNotReadyException", "InternalServerException").
# TYPE gateway_failovers_total counter
gateway_failovers_total{alias="agent",reason="ThrottlingException"} 1
# HELP gateway_requests_total Requests answered, counted once each when its answer (or stream) ended: by transport ("rest" for the Nirmata API, "openai", "anthropic", "grpc"), route ("chat", "chat_stream", "capabilities", "models", "count_tokens", "other"), outcome as a snake-case gRPC code ("ok", "invalid_argument", "resource_exhausted"), model and client type. Requests refused before they were read (no key) count with model "none".
# TYPE gateway_requests_total counter
gateway_requests_total{client_type="kyverno",code="ok",model="anthropic.claude-3-5-sonnet",route="chat_stream",transport="rest"} 1
# HELP gateway_response_format_invalid_total Answers to response_format "json_object" requests that are not one JSON object; they were returned unchanged.
# TYPE gateway_response_format_invalid_total counter
gateway_response_format_invalid_total{model="anthropic.claude-3-5-sonnet"} 1
# HELP gateway_thinking_disabled_total Requests asking for extended thinking that the gateway sent without it, by reason: "missing-signature" (a tool turn without its signed reasoning blocks, not in the reasoning cache), "forced-tool-choice" or "prefill" (Claude refuses thinking with either), "failover" (answered by another foundation model than the one the conversation's reasoning is bound to).
# TYPE gateway_thinking_disabled_total counter
gateway_thinking_disabled_total{model="anthropic.claude-3-5-sonnet",reason="failover"} 1
# HELP gateway_tokens_total Tokens of successful answers as Bedrock reported them, by direction: "input" (prompt tokens, prompt-cache reads and writes included) or "output".
# TYPE gateway_tokens_total counter
gateway_tokens_total{client_type="kyverno",direction="input",model="anthropic.claude-3-5-sonnet"} 12
gateway_tokens_total{client_type="kyverno",direction="output",model="anthropic.claude-3-5-sonnet"} 34
# HELP gateway_upstream_errors_total Bedrock calls that failed after the SDK's retries, by Bedrock error code ("ThrottlingException"), "transport" (no answer or an unreadable one), "truncated" (a stream that ended before messageStop) or "invalid_answer" (a 200 the gateway could not use). A call the client or a deadline ended is not counted.
# TYPE gateway_upstream_errors_total counter
gateway_upstream_errors_total{error_code="ThrottlingException",model="none"} 1
# HELP gateway_store_errors_total Calls made without the shared store (Redis, redis_url), by operation: "incr" and "counts" (limit counters), "put" and "get" (reasoning cache, failover affinity, stored responses), "delete" (stored responses). A call fails or runs out of its request's redis_timeout, or is not sent while the last ping failed or once that time is spent. Meanwhile limits fail open and caches use their local copy. A call whose client left is not counted.
# TYPE gateway_store_errors_total counter
gateway_store_errors_total{op="counts"} 0
gateway_store_errors_total{op="delete"} 0
gateway_store_errors_total{op="get"} 0
gateway_store_errors_total{op="incr"} 0
gateway_store_errors_total{op="put"} 1
# HELP gateway_store_up 1 while the shared store answers its pings (always without redis_url), 0 when the last ping failed.
# TYPE gateway_store_up gauge
gateway_store_up 0
`
	require.NoError(t, testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want),
		"gateway_requests_total", "gateway_tokens_total", "gateway_upstream_errors_total",
		"gateway_cache_read_tokens_total", "gateway_cache_write_tokens_total", "gateway_response_format_invalid_total",
		"gateway_rate_limited_total", "gateway_store_errors_total", "gateway_store_up", "gateway_failovers_total", "gateway_thinking_disabled_total"))
}

// Client-controlled labels beyond their cap land in "other", and stay bounded.
func TestCardinalityCap(t *testing.T) {
	t.Parallel()
	m := New()
	const extra = 7
	for i := range MaxClientTypes + extra {
		m.ToolCalls(model1, fmt.Sprintf("client-%d", i), ToolValid, 1)
	}
	for i := range MaxModels + extra {
		m.Request(TransportREST, RouteChat, "ok", fmt.Sprintf("model-%d", i), "client-0", time.Millisecond)
	}
	m.ToolCalls(model1, "client-0", ToolValid, 1) // admitted earlier: still its own series

	assert.Equal(t, MaxClientTypes+1, testutil.CollectAndCount(m.toolCalls))
	assert.Equal(t, float64(extra), testutil.ToFloat64(m.toolCalls.WithLabelValues(model1, LabelOther, ToolValid)))
	assert.Equal(t, 2.0, testutil.ToFloat64(m.toolCalls.WithLabelValues(model1, "client-0", ToolValid)))

	// model1 took a model slot first, so MaxModels-1 model-N got in, plus "other".
	assert.Equal(t, MaxModels, testutil.CollectAndCount(m.requests))
	assert.Equal(t, float64(extra+1), testutil.ToFloat64(m.requests.WithLabelValues(TransportREST, RouteChat, "ok", LabelOther, "client-0")))

	// Models and client types have independent caps.
	m.Tokens("model-0", "client-1", 1, 1)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.tokens.WithLabelValues("model-0", "client-1", "input")))
}

// TestFailedRequestsCannotUseUpTheModelCap: requests naming models that do not exist (all
// 404) are counted as "other" and take no slot, so a real model that answers later still
// gets its own series; configured models have theirs from the start.
func TestFailedRequestsCannotUseUpTheModelCap(t *testing.T) {
	t.Parallel()
	m := New()
	const configured = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	m.Configure(Configured{Models: []string{configured}})
	m.Request(TransportREST, RouteChat, "ok", configured, client, time.Millisecond) // client answered once: its own series
	for i := range MaxModels + 10 {
		bogus := fmt.Sprintf("bogus-%d", i)
		m.UpstreamError(bogus, "ResourceNotFoundException")
		m.Request(TransportREST, RouteChat, "not_found", bogus, client, time.Millisecond)
	}
	assert.Equal(t, float64(MaxModels+10), testutil.ToFloat64(m.requests.WithLabelValues(TransportREST, RouteChat, "not_found", LabelOther, client)))
	assert.Equal(t, 10+2, testutil.CollectAndCount(m.requests), "no bogus model got a series (10: the configured model's from the start)")
	m.Request(TransportREST, RouteChat, "not_found", configured, "junk", time.Millisecond)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(TransportREST, RouteChat, "not_found", configured, LabelOther)),
		"a client type that never succeeded has no series either")

	const real = "mistral.mistral-large-2407-v1:0"
	m.Request(TransportREST, RouteChat, "ok", real, client, time.Millisecond)
	m.Request(TransportREST, RouteChat, "invalid_argument", real, client, time.Millisecond)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(TransportREST, RouteChat, "ok", real, client)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(TransportREST, RouteChat, "invalid_argument", real, client)),
		"once it answered, its failures are its own too")
	m.Request(TransportREST, RouteChat, "unavailable", configured, client, time.Millisecond)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(TransportREST, RouteChat, "unavailable", configured, client)))
}

// TestConfigureZeroSeries: right after Configure, before any request, the series a
// dashboard is built from exist at zero for each configured model, error code and alias
// that can fail over, and for nothing else; the codes take no place under the cap on error
// codes.
func TestConfigureZeroSeries(t *testing.T) {
	t.Parallel()
	m := New()
	const model2 = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	m.Configure(Configured{
		Models:          []string{model1, model2},
		FailoverAliases: []string{"agent"},
		ErrorCodes:      []string{"ThrottlingException", "ValidationException"},
		FailoverCodes:   []string{"ThrottlingException"},
	})
	for _, model := range []string{model1, model2} {
		for _, transport := range []string{TransportREST, TransportOpenAI, TransportGRPC} {
			for _, route := range []string{RouteChat, RouteChatStream} {
				assert.Zero(t, testutil.ToFloat64(m.requests.WithLabelValues(transport, route, "ok", model, LabelNone)))
			}
		}
		for _, code := range []string{"ThrottlingException", "ValidationException", UpstreamTransport, UpstreamTruncated, UpstreamInvalidAnswer} {
			assert.Zero(t, testutil.ToFloat64(m.upstreamErrors.WithLabelValues(model, code)))
		}
	}
	for _, c := range []struct {
		name string
		c    prometheus.Collector
		n    int
	}{
		{"requests: 5 transports, 2 routes, 2 models", m.requests, 20},
		{"tokens: 2 directions, 2 models", m.tokens, 4},
		{"cache read", m.cacheRead, 2},
		{"cache write", m.cacheWrite, 2},
		{"retries", m.retries, 2},
		{"upstream errors: 5 codes, 2 models", m.upstreamErrors, 10},
		{"failovers: 1 alias, 1 code", m.failovers, 1},
		{"first event: none, a histogram per model and client type is not a dashboard's need", m.firstEvent, 0},
	} {
		assert.Equal(t, c.n, testutil.CollectAndCount(c.c), c.name)
	}
	assert.Zero(t, testutil.ToFloat64(m.failovers.WithLabelValues("agent", "ThrottlingException")))

	// The codes are outside the cap: MaxErrorCodes newcomers still get their own series.
	for i := range MaxErrorCodes {
		m.UpstreamError(model1, fmt.Sprintf("NewException%d", i))
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(m.upstreamErrors.WithLabelValues(model1, fmt.Sprintf("NewException%d", MaxErrorCodes-1))))
	m.UpstreamError(model1, "ThrottlingException")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.upstreamErrors.WithLabelValues(model1, "ThrottlingException")))
}

func TestLabelHygiene(t *testing.T) {
	t.Parallel()
	m := New()
	long := strings.Repeat("x", 200)
	m.Request(TransportREST, "", "", "bad\xffmodel", long, time.Millisecond) // must not panic
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(
		TransportREST, LabelNone, LabelNone, LabelOther, LabelOther)))
	m.Request(TransportREST, "", "ok", "bad\xffmodel", long, time.Millisecond)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(
		TransportREST, LabelNone, "ok", "bad\uFFFDmodel", strings.Repeat("x", MaxClientTypeLen))))
	m.Configure(Configured{Models: []string{model1}})
	m.UpstreamError(model1, long)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.upstreamErrors.WithLabelValues(model1, strings.Repeat("x", MaxErrorCodeLen))))
}

func TestNilMetrics(t *testing.T) {
	t.Parallel()
	var m *Metrics
	assert.NotPanics(t, func() {
		m.Request(TransportREST, RouteChat, "ok", model1, client, time.Second)
		m.FirstEvent(model1, client, time.Second)
		m.UpstreamError(model1, UpstreamTransport)
		m.Tokens(model1, client, 1, 2)
		m.ToolCalls(model1, client, ToolValid, 1)
		m.RepairAttempts(model1, 1)
		m.Repairs(model1, 1, 1)
		m.StreamOpened(client)()
		m.Retry(model1)
		m.Inflight(1)
		m.UpstreamCall()()
		m.Configure(Configured{Models: []string{model1}})
		m.Rejected(RejectDraining)
		m.KeyLimit("ci", "tokens_per_day")
		m.RateLimited("ci", "tokens_per_day")
		m.Cost("ci", model1, 1)
	})
	assert.Nil(t, m.Gatherer())
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, http.StatusNotFound, rec.Code)
}

// Registries are independent: New does not touch the global default registry, and two
// Metrics do not see each other's counts.
func TestIndependentRegistries(t *testing.T) {
	t.Parallel()
	a, b := New(), New()
	a.Retry(model1)
	assert.Equal(t, 1, testutil.CollectAndCount(a.retries))
	assert.Equal(t, 0, testutil.CollectAndCount(b.retries))
	families, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, f := range families {
		assert.False(t, strings.HasPrefix(f.GetName(), "gateway_"), f.GetName())
	}
}

// Scraped over real HTTP, the handler serves valid exposition text with every gateway_
// family, typed as documented, beside the Go runtime and process collectors.
func TestHandler(t *testing.T) {
	t.Parallel()
	m := New()
	m.Request(TransportREST, RouteChat, "ok", model1, client, time.Second)
	m.FirstEvent(model1, client, time.Second)
	m.UpstreamError(model1, "ThrottlingException")
	m.Tokens(model1, client, 1, 2)
	m.ToolCalls(model1, client, ToolUnchecked, 1)
	m.RepairAttempts(model1, 1)
	m.Repairs(model1, 1, 1)
	m.ResponseFormatInvalid(model1)
	defer m.StreamOpened(client)()
	m.Retry(model1)
	m.Inflight(1)
	defer m.UpstreamCall()()
	m.Rejected(RejectUnauthenticated)
	m.RateLimited("ci", "tokens_per_minute")
	m.Cost("ci", model1, 0.001)
	m.AuditWritten(2)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err, "exposition text:\n%s", body)

	want := map[string]dto.MetricType{
		"gateway_requests_total":                 dto.MetricType_COUNTER,
		"gateway_request_duration_seconds":       dto.MetricType_HISTOGRAM,
		"gateway_stream_first_event_seconds":     dto.MetricType_HISTOGRAM,
		"gateway_upstream_errors_total":          dto.MetricType_COUNTER,
		"gateway_tokens_total":                   dto.MetricType_COUNTER,
		"gateway_tool_calls_total":               dto.MetricType_COUNTER,
		"gateway_tool_repair_attempts_total":     dto.MetricType_COUNTER,
		"gateway_synthesized_tool_results_total": dto.MetricType_COUNTER,
		"gateway_orphan_tool_results_total":      dto.MetricType_COUNTER,
		"gateway_response_format_invalid_total":  dto.MetricType_COUNTER,
		"gateway_open_streams":                   dto.MetricType_GAUGE,
		"gateway_upstream_retries_total":         dto.MetricType_COUNTER,
		"gateway_inflight_requests":              dto.MetricType_GAUGE,
		"gateway_upstream_calls_in_flight":       dto.MetricType_GAUGE,
		"gateway_rejected_total":                 dto.MetricType_COUNTER,
		"gateway_parallel_calls_learned_total":   dto.MetricType_COUNTER,
		"gateway_rate_limited_total":             dto.MetricType_COUNTER,
		"gateway_cost_usd_total":                 dto.MetricType_COUNTER,
		"gateway_store_errors_total":             dto.MetricType_COUNTER,
		"gateway_store_up":                       dto.MetricType_GAUGE,
		"gateway_audit_written_total":            dto.MetricType_COUNTER,
	}
	for name, typ := range want {
		f, ok := families[name]
		if assert.True(t, ok, "missing %s", name) {
			assert.Equal(t, typ, f.GetType(), name)
		}
	}
	var gateway int
	for name := range families {
		if strings.HasPrefix(name, "gateway_") {
			gateway++
		}
	}
	assert.Equal(t, len(want), gateway, "a gateway_ family this test does not know")
	assert.Contains(t, families, "go_goroutines")
	if runtime.GOOS == "linux" {
		assert.Contains(t, families, "process_cpu_seconds_total")
	}
	h := families["gateway_request_duration_seconds"].GetMetric()[0].GetHistogram()
	require.Len(t, h.GetBucket(), 17, "16 buckets and +Inf")
	assert.InDelta(t, 0.005, h.GetBucket()[0].GetUpperBound(), 1e-9)
	assert.InDelta(t, 120, h.GetBucket()[15].GetUpperBound(), 1e-6)
	assert.True(t, math.IsInf(h.GetBucket()[16].GetUpperBound(), 1))
}

// histogram returns the sample count and sum of the one series of family name with the
// given label pairs.
func histogram(t *testing.T, m *Metrics, name string, labelPairs ...string) (uint64, float64) {
	t.Helper()
	families, err := m.Gatherer().Gather()
	require.NoError(t, err)
	want := map[string]string{}
	for i := 0; i < len(labelPairs); i += 2 {
		want[labelPairs[i]] = labelPairs[i+1]
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, mt := range f.GetMetric() {
			if len(mt.GetLabel()) != len(want) {
				continue
			}
			for _, l := range mt.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return mt.GetHistogram().GetSampleCount(), mt.GetHistogram().GetSampleSum()
		}
	}
	t.Fatalf("no %s series with labels %v", name, want)
	return 0, 0
}

// TestParamsDropped: each dropped field counts once a call by its path with indexes as
// N, so positions do not make series; the distinct paths are bounded.
func TestParamsDropped(t *testing.T) {
	t.Parallel()
	m := New()
	m.ParamsDropped(TransportAnthropic, []string{"tools.3.defer_loading", "tools.12.defer_loading", "anthropic-beta: context-1m-2025-08-07", "x2.3y"})
	m.ParamsDropped(TransportOpenAI, []string{"messages[2].content[10]", "seed"})
	for _, c := range []struct {
		transport, param string
		want             float64
	}{
		{TransportAnthropic, "tools.N.defer_loading", 2},
		{TransportAnthropic, "anthropic-beta: context-1m-2025-08-07", 1},
		{TransportAnthropic, "x2.3y", 1},
		{TransportOpenAI, "messages[N].content[N]", 1},
		{TransportOpenAI, "seed", 1},
	} {
		assert.Equal(t, c.want, testutil.ToFloat64(m.droppedParams.WithLabelValues(c.transport, c.param)), c.param)
	}
	for i := range MaxParams + 10 {
		m.ParamsDropped(TransportOpenAI, []string{fmt.Sprintf("member_%d", i)})
	}
	assert.Equal(t, 10+5.0, testutil.ToFloat64(m.droppedParams.WithLabelValues(TransportOpenAI, LabelOther)), "5 paths before, then newcomers beyond the cap count as other")
	var nilMetrics *Metrics
	nilMetrics.ParamsDropped(TransportREST, []string{"seed"})
}
