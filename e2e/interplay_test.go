package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
	"github.com/nirmata/llm-gateway/internal/redistest"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Failover (docs/PROTOCOL.md 14.4) together with the features built beside it: traces
// (14.6), affinity shared through Redis (14.3) and keys' limits (14.2). Each runs the real
// gateway on the simulator over HTTP, with faults scoped to the first target's model.

// twoTargets is an alias whose first target is the gateway's own region's testModel and
// whose second is Nova Pro in another region.
var twoTargets = []config.Target{{ModelID: testModel}, {ModelID: novaPro, Region: "us-west-2"}}

// agentTurn2 is agentBody's conversation one tool turn on: the same system prompt, tools
// and first user message, and the call callID with its result.
func agentTurn2(user, callID string) string {
	return strings.Replace(agentBody(user, ""), `}], "tools"`,
		`}, {"role": "assistant", "content": "", "tool_calls": [{"id": "`+callID+`", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
		{"role": "tool", "tool_call_id": "`+callID+`", "content": "21"}], "tools"`, 1)
}

// byStart sorts spans by their start time.
func byStart(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return int(a.GetStartTimeUnixNano() - b.GetStartTimeUnixNano()) })
	return spans
}

// requireFailedAttempt checks the client span of an attempt the first target failed with
// Bedrock's error code: its own model and region, the error, and no usage.
func requireFailedAttempt(t *testing.T, c span, maxTokens float64, code string) {
	t.Helper()
	assert.Equal(t, "chat "+testModel, c.GetName())
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, c.GetKind())
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, c.GetStatus().GetCode())
	assert.Equal(t, code, c.GetStatus().GetMessage())
	assert.Equal(t, code, c.str("error.type"))
	assert.Equal(t, testModel, c.str("gen_ai.request.model"))
	assert.Equal(t, "us-east-1", c.str("cloud.region"), "the gateway's own region")
	assert.InDelta(t, maxTokens, c.int("gen_ai.request.max_tokens"), 0, "what this attempt sent")
	assert.Nil(t, c.attr("gen_ai.usage.input_tokens"), "a throttled call has no usage")
	assert.Nil(t, c.attr("gen_ai.response.finish_reasons"))
}

// requireAnsweringAttempt checks the client span of the attempt the second target
// answered: its model and region, and the usage the client got.
func requireAnsweringAttempt(t *testing.T, c span, maxTokens float64, u nirmataUsage) {
	t.Helper()
	assert.Equal(t, "chat "+novaPro, c.GetName())
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, c.GetKind())
	assert.Equal(t, tracepb.Status_STATUS_CODE_UNSET, c.GetStatus().GetCode())
	assert.Nil(t, c.attr("error.type"))
	assert.Equal(t, novaPro, c.str("gen_ai.request.model"))
	assert.Equal(t, "us-west-2", c.str("cloud.region"), "the target's region")
	assert.InDelta(t, maxTokens, c.int("gen_ai.request.max_tokens"), 0, "what this attempt sent")
	assert.Positive(t, u.PromptTokens)
	assert.Equal(t, u.PromptTokens, c.int("gen_ai.usage.input_tokens"), "prompt_tokens as the client got it")
	assert.Equal(t, u.CompletionTokens, c.int("gen_ai.usage.output_tokens"))
	assert.Equal(t, u.CachedTokens, c.int("gen_ai.usage.cache_read.input_tokens"))
	assert.Equal(t, u.CacheWriteTokens, c.int("gen_ai.usage.cache_creation.input_tokens"))
	assert.Equal(t, []string{"end_turn"}, c.strs("gen_ai.response.finish_reasons"))
}

// TestFailoverTraced: a call that fails over is one server span with a client span per
// attempt under it: the failed one, under Bedrock's error code, with the first target's
// model and region and no usage, then the one that answered, with the second target's model
// and region and the usage the client got. A unary call throttled; a stream whose first
// target sent ServiceUnavailableException before its first content (OpenAI's SSE); a stream
// throttled before its body (Nirmata's JSONL).
func TestFailoverTraced(t *testing.T) {
	rcv := newHTTPReceiver(t)
	sim := recordSim(t, "throttle,mode=unary,model="+testModel,
		"stream_exception,exception=serviceUnavailableException,after=1,times=1,model="+testModel, "throttle,mode=stream,model="+testModel)
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.endpoint})
	cfg := defaultConfig(t)
	cfg.ModelAliases = map[string][]config.Target{"agent": twoTargets}
	g, stop := startTraced(t, cfg, sim.upstream())
	url := "http://" + g.HTTP + "/llm-apps/chat"

	resp, raw := post(t, url, "Bearer "+testKey, agentBody("Trace about Oslo.", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var unary struct{ Usage nirmataUsage }
	require.NoError(t, json.Unmarshal(raw, &unary))

	sse, st := oaStream(t, g, testKey, oaRequest{Model: "agent", Messages: []oaMessage{oaUser("Stream about Lima.")},
		StreamOptions: &oaStreamOptions{IncludeUsage: true}})
	require.Nil(t, st.failure)
	require.NotNil(t, st.usage)

	jsonl := streamPostKey(t, url+"?stream=true", testKey, agentBody("Stream about Pune.", ""))
	require.Equal(t, http.StatusOK, jsonl.StatusCode)
	done := lastJSONLLine(t, jsonl.Body)
	require.Equal(t, "done", done.Type)

	require.Equal(t, []simCall{
		{Model: testModel, Region: "us-east-1"}, {Model: novaPro, Region: "us-west-2"},
		{Model: testModel, Stream: true, Region: "us-east-1"}, {Model: novaPro, Stream: true, Region: "us-west-2"},
		{Model: testModel, Stream: true, Region: "us-east-1"}, {Model: novaPro, Stream: true, Region: "us-west-2"},
	}, sim.received(), "each call failed over")
	stop()

	spans := rcv.spans()
	require.Len(t, spans, 9, "a server span and two client spans per call")
	for i, call := range []struct {
		requestID, failure string
		usage              nirmataUsage
	}{
		{resp.Header.Get("X-Request-Id"), "ThrottlingException", unary.Usage},
		{sse.Header.Get("X-Request-Id"), "ServiceUnavailableException", nirmataUsage{PromptTokens: st.usage.PromptTokens,
			CompletionTokens: st.usage.CompletionTokens, CachedTokens: st.usage.PromptTokensDetails.CachedTokens}},
		{jsonl.Header.Get("X-Request-Id"), "ThrottlingException", done.Usage},
	} {
		srv := serverSpan(t, spans, call.requestID)
		assert.Equal(t, "ok", srv.str("gateway.outcome"))
		assert.Equal(t, "agent", srv.str("gateway.request.model"))
		assert.Equal(t, novaPro, srv.str("gateway.model"), "the model that answered")
		assert.Equal(t, tracepb.Status_STATUS_CODE_UNSET, srv.GetStatus().GetCode(), "the call succeeded")
		kids := byStart(children(spans, srv))
		require.Len(t, kids, 2)
		requireFailedAttempt(t, kids[0], maxTokensSent(t, sim, 2*i), call.failure)
		requireAnsweringAttempt(t, kids[1], maxTokensSent(t, sim, 2*i+1), call.usage)
		assert.GreaterOrEqual(t, kids[1].GetStartTimeUnixNano(), kids[0].GetEndTimeUnixNano(), "one attempt after the other")
	}
}

// TestFailoverAffinitySharedByReplicas: two replicas on one Redis. A conversation that
// replica A failed over to the second target (the first throttled for that call only) has
// its next turn, sent to replica B, go to the second target first: B makes one Bedrock
// call, to that target, although the first target would answer it now.
func TestFailoverAffinitySharedByReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sim := recordSim(t, "throttle,times=1,model="+testModel)
	cfg := defaultConfig(t)
	onRedis(&cfg, srv.URL())
	cfg.ModelAliases = map[string][]config.Target{"agent": twoTargets}
	a, b := start(t, cfg, sim.upstream()), start(t, cfg, sim.upstream())

	const user = "Weather in Oslo? Use get_weather."
	resp, raw := post(t, "http://"+a.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentBody(user, ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var r chatResponse
	require.NoError(t, json.Unmarshal(raw, &r))
	assert.Equal(t, novaPro, r.Metadata.Model)
	require.Len(t, r.ToolCalls, 1)
	require.Equal(t, []string{testModel, novaPro}, models(sim.received()), "A failed over")
	assert.Equal(t, "*1", srv.Do("KEYS", store.KeyPrefix+"affinity:*"), "A wrote the conversation's target to Redis")

	resp, raw = post(t, "http://"+b.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentTurn2(user, r.ToolCalls[0].ID))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.NoError(t, json.Unmarshal(raw, &r))
	assert.Equal(t, novaPro, r.Metadata.Model)
	assert.Equal(t, []simCall{{Model: novaPro, Region: "us-west-2"}}, sim.received()[2:], "B made one call, to the second target")
	assert.Zero(t, metricValue(t, b, "gateway_failovers_total", nil))
	assert.Zero(t, metricValue(t, b, "gateway_upstream_errors_total", nil))
	assert.InDelta(t, 1, metricValue(t, a, "gateway_failovers_total", map[string]string{"alias": "agent", "reason": "ThrottlingException"}), 0)
	for _, g := range []started{a, b} {
		for _, op := range []string{"put", "get"} {
			assert.Zero(t, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": op}), op)
		}
	}

	// Another conversation on B starts at the first target, which answers now.
	resp, raw = post(t, "http://"+b.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentBody("Weather in Lima?", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.NoError(t, json.Unmarshal(raw, &r))
	assert.Equal(t, testModel, r.Metadata.Model)
	assert.Len(t, sim.received(), 4)
}

// TestFailoverCountsTheAnswerOnly: a key's token limits count, of a call that failed over,
// the attempt that answered (the throttled one, or the stream that failed before its first
// content, has no usage), so the counters equal what the client got; requests_per_minute
// counts each call once, however many attempts it took.
func TestFailoverCountsTheAnswerOnly(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "throttle,mode=unary,model="+testModel, "stream_exception,after=1,model="+testModel)
	clock := clocktest.New(at37)
	counters := store.NewMemory(clock.Now)
	cfg := keysConfig(t, "keys:\n  - {name: agent, key: agent-key-0123456789, requests_per_minute: 100, tokens_per_minute: 100000000, tokens_per_day: 100000000}\n")
	cfg.ModelAliases = map[string][]config.Target{"agent": twoTargets}
	g := start(t, cfg, gateway.WithClock(clock.Now), gateway.WithCounters(counters), sim.upstream())
	url := "http://" + g.HTTP + "/llm-apps/chat"

	var got []nirmataUsage
	for _, user := range []string{"Count Oslo.", "Count Lima."} {
		resp, raw := post(t, url, "Bearer agent-key-0123456789", agentBody(user, ""))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
		var a struct{ Usage nirmataUsage }
		require.NoError(t, json.Unmarshal(raw, &a))
		got = append(got, a.Usage)
	}
	stream := streamPostKey(t, url+"?stream=true", "agent-key-0123456789", agentBody("Count Pune.", ""))
	require.Equal(t, http.StatusOK, stream.StatusCode)
	done := lastJSONLLine(t, stream.Body)
	require.Equal(t, "done", done.Type)
	got = append(got, done.Usage)
	require.Equal(t, []string{testModel, novaPro, testModel, novaPro, testModel, novaPro}, models(sim.received()), "each call failed over")
	require.InDelta(t, 3, metricValue(t, g, "gateway_failovers_total", map[string]string{"alias": "agent"}), 0)

	var want int64
	for _, u := range got {
		require.Positive(t, u.PromptTokens)
		want += u.bedrock().weighted()
	}
	rpm := "lim:{agent}:rpm:" + strconv.FormatInt(at37.Truncate(time.Minute).Unix(), 10)
	used, err := counters.Counts(t.Context(), append(windowKeys("agent", at37), rpm)...)
	require.NoError(t, err)
	assert.Equal(t, []int64{want, want, 3}, used, "the minute's and the day's tokens, and the requests")
}
