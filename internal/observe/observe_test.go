package observe

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/toolguard"
)

const model = "anthropic.claude-sonnet-4-20250514-v1:0"

// TestEndCountsWhatTheCallDid: a call's end writes one access line (no prompt text: the
// Result holds none) and counts what the core reported: an answer that is not one JSON
// object (logged without its text), tool calls by outcome, those no check saw among them,
// and repair attempts.
func TestEndCountsWhatTheCallDid(t *testing.T) {
	t.Parallel()
	logCore, logs := observer.New(zapcore.InfoLevel)
	m := metrics.New()
	o := New(zap.New(logCore), m, nil)
	call := o.Begin(metrics.TransportREST, metrics.RouteChat, "POST", "/llm-apps/chat")
	require.Len(t, call.RequestID, 28)
	call.KeyID = "ci"
	call.Result = core.Result{Model: model, FormatInvalid: true, ToolCalls: 3,
		ToolOutcomes: toolguard.Outcomes{Repaired: 2}, RepairAttempts: 1, CostUSD: 0.0125}
	call.End()

	n, err := testutil.GatherAndCount(m.Gatherer(), "gateway_response_format_invalid_total")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	entries := logs.FilterMessage("answer is not one JSON object").AllUntimed()
	require.Len(t, entries, 1)
	assert.Equal(t, map[string]any{"request_id": call.RequestID, "model": model, "response_format": "json_object"}, entries[0].ContextMap(), "no text")
	assert.InDelta(t, 2, counter(t, m, "gateway_tool_calls_total", "repaired"), 0)
	assert.InDelta(t, 1, counter(t, m, "gateway_tool_calls_total", "unchecked"), 0, "the call no check saw")
	assert.InDelta(t, 1, counter(t, m, "gateway_tool_repair_attempts_total", ""), 0)
	assert.InDelta(t, 0.0125, counter(t, m, "gateway_cost_usd_total", ""), 0, "by key and model")
	access := logs.FilterMessage("http").AllUntimed()
	require.Len(t, access, 1, "one access line")
	assert.Equal(t, "ok", access[0].ContextMap()["code"])
	assert.Equal(t, 0.0125, access[0].ContextMap()["cost_usd"])
	assert.Equal(t, 0.0125, call.record(0).CostUSD, "the audit record's cost")
	assert.Equal(t, "ci", access[0].ContextMap()["key_id"])
}

// counter sums the series of a counter, those with outcome when it is given.
func counter(t *testing.T, m *metrics.Metrics, name, outcome string) float64 {
	t.Helper()
	families, err := m.Gatherer().Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if outcome != "" && l.GetName() == "outcome" && l.GetValue() != outcome {
					continue metrics
				}
			}
			sum += s.GetCounter().GetValue()
		}
	}
	return sum
}

// accessLines are the access lines written as the gateway writes them, JSON, each decoded.
func accessLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for l := range strings.Lines(buf.String()) {
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &line), l)
		lines = append(lines, line)
	}
	return lines
}

// TestAccessLine: a failed call's line has the reason its client was told, clipped to
// ReasonMax; a chat call's says whether it streamed; the latency is latency_ms, a number
// of milliseconds; the model is the one the call went to, and the name the request gave
// when it is another (an alias). A successful call has no reason, and a call that is not a
// chat no stream field.
func TestAccessLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	o := New(zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.InfoLevel)), metrics.New(), nil)

	refused := o.Begin(metrics.TransportOpenAI, metrics.RouteChat, "POST", "/v1/chat/completions")
	refused.Result = core.Result{Model: model, RequestModel: "agent"}
	f := refused.Fail(t.Context(), fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "max_tokens must be at least 1, got 0"))
	refused.Status = 400
	refused.End()

	long := o.Begin(metrics.TransportREST, metrics.RouteChatStream, "POST", "/llm-apps/chat")
	long.Fail(t.Context(), fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "tools: %s", strings.Repeat("é", 300)))
	long.End()

	ok := o.Begin(metrics.TransportREST, metrics.RouteChatStream, "POST", "/llm-apps/chat")
	ok.Result = core.Result{Model: model, RequestModel: model}
	ok.End()

	models := o.Begin(metrics.TransportOpenAI, metrics.RouteModels, "GET", "/v1/models")
	models.End()

	lines := accessLines(t, &buf)
	require.Len(t, lines, 4)
	assert.Equal(t, "invalid request: max_tokens must be at least 1, got 0", lines[0]["reason"])
	assert.Equal(t, f.Message, lines[0]["reason"], "what the client was told")
	assert.Equal(t, false, lines[0]["stream"])
	assert.Equal(t, model, lines[0]["model"])
	assert.Equal(t, "agent", lines[0]["request_model"])
	assert.EqualValues(t, 400, lines[0]["status"])

	reason := lines[1]["reason"].(string)
	assert.LessOrEqual(t, len(reason), ReasonMax+len("…"))
	assert.True(t, strings.HasPrefix(reason, "invalid request: tools: éé"), reason)
	assert.True(t, utf8.ValidString(reason), "clipped on a rune boundary")
	assert.Equal(t, true, lines[1]["stream"])

	assert.NotContains(t, lines[2], "reason")
	assert.NotContains(t, lines[2], "request_model", "the same as model")
	assert.Equal(t, "ok", lines[2]["code"])
	assert.NotContains(t, lines[3], "stream", "not a chat")
	for _, line := range lines {
		assert.NotContains(t, line, "latency", "a latency without its unit")
		ms, isNumber := line["latency_ms"].(float64)
		assert.True(t, isNumber, "latency_ms is a number: %v", line["latency_ms"])
		assert.GreaterOrEqual(t, ms, 0.0)
	}
}

// TestInflightRequests: gateway_inflight_requests counts the calls begun and not ended,
// whatever they are (a chat, a model listing): requests, not Bedrock calls.
func TestInflightRequests(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	o := New(zap.NewNop(), m, nil)
	inflight := func() float64 {
		families, err := m.Gatherer().Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "gateway_inflight_requests" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no gateway_inflight_requests")
		return 0
	}
	chat := o.Begin(metrics.TransportREST, metrics.RouteChat, "POST", "/llm-apps/chat")
	models := o.Begin(metrics.TransportOpenAI, metrics.RouteModels, "GET", "/v1/models")
	assert.Equal(t, 2.0, inflight())
	models.End()
	assert.Equal(t, 1.0, inflight())
	chat.End()
	assert.Equal(t, 0.0, inflight())
}

// TestRequestIDsSortByTime: an id starts with its call's start in Unix milliseconds, so
// ids sort as their calls began (the audit stores index them at one end), also for a call
// begun after it started; the rest is random, so two calls of the same millisecond get
// two ids.
func TestRequestIDsSortByTime(t *testing.T) {
	t.Parallel()
	start := time.UnixMilli(1_795_000_000_123)
	a, b := NewRequestID(start), NewRequestID(start)
	assert.NotEqual(t, a, b, "same millisecond")
	assert.Equal(t, "01a1ee565e7b", a[:12], "the start's milliseconds")
	assert.Regexp(t, "^[0-9a-f]{28}$", a)
	later := NewRequestID(start.Add(time.Millisecond))
	assert.Less(t, max(a, b), later)
	assert.Less(t, NewRequestID(start.Add(-time.Millisecond)), min(a, b))

	// A call begun after it started (a head net/http answers itself) is named by its start.
	call := New(zap.NewNop(), metrics.New(), nil).BeginAt(start, metrics.TransportREST, metrics.RouteOther, "GET", "/")
	assert.Equal(t, start, call.Start)
	assert.Equal(t, "01a1ee565e7b", call.RequestID[:12])
	call.End()
}
