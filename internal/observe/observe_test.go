package observe

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/core"
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
	require.Len(t, call.RequestID, 16)
	call.Result = core.Result{Model: model, FormatInvalid: true, ToolCalls: 3,
		ToolOutcomes: toolguard.Outcomes{Repaired: 2}, RepairAttempts: 1}
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
	access := logs.FilterMessage("http").AllUntimed()
	require.Len(t, access, 1, "one access line")
	assert.Equal(t, "ok", access[0].ContextMap()["code"])
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
