package e2e

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// The parallel-call memory (docs/PROTOCOL.md 13.4): a client, its key with its
// User-Agent, seen answering only the first of several tool calls (the kubectl-ai agent
// on gollm's Nirmata provider) starts its later conversations with parallel tool calls
// off, so its first turn no longer costs a round.

// agentUA is the User-Agent of the client that answers only the first call.
const agentUA = "kubectl-ai/0.0.1 (gollm)"

// pinnedKey is a key whose settings keep parallel tool calls on.
const pinnedKey = "pinned-key-0123456789"

// learned is how the log line of a client learned reads.
const learned = "parallel tool calls off for a client that answers just the first of them"

// firstTurn starts a conversation as ua with key (on model, with extra members), asking
// for two calls at once, and returns the answer's calls.
func firstTurn(t *testing.T, g started, key, ua, model, extra string) []gollmToolCall {
	t.Helper()
	body := strings.Replace(twoTools, `"tool_choice": "auto"`, `"tool_choice": "auto", "model": "`+model+`"`+extra, 1)
	return postAs(t, g, key, ua, body)
}

// answerFirst sends the next turn of the conversation whose first turn made calls, as
// gollm's provider does: with the result of the first call only.
func answerFirst(t *testing.T, g started, key, ua string, calls []gollmToolCall) {
	t.Helper()
	require.Len(t, calls, 2)
	tc, err := json.Marshal(calls)
	require.NoError(t, err)
	body := `{"messages":[{"role":"user","content":"Weather and time in Paris? Use get_weather and get_time."},` +
		`{"role":"assistant","content":"","tool_calls":` + string(tc) + `},` +
		`{"role":"tool","tool_call_id":"` + calls[0].ID + `","content":"{\"temp_c\":21}"}],` +
		`"tools":` + twoToolsTools(t) + `,"model":"` + testModel + `"}`
	postAs(t, g, key, ua, body)
}

// twoToolsTools is the tools member of twoTools.
func twoToolsTools(t *testing.T) string {
	var v struct{ Tools json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(twoTools), &v))
	return string(v.Tools)
}

// postAs posts a Nirmata body as ua with key, requires a 200, and returns its calls.
func postAs(t *testing.T, g started, key, ua, body string) []gollmToolCall {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.HTTP+"/llm-apps/chat", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "NIRMATA-API "+key)
	req.Header.Set("User-Agent", ua)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var out gollmResponse
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.ToolCalls
}

// TestParallelCallsRemembered, without a shared store: once a client answered only the
// first of two calls, its next conversations start with one call a turn; the request's
// parallel_tool_calls: true, an alias's or a key's setting beat that; another User-Agent
// of the same key is another client; the memory ends after parallel_memory_ttl.
func TestParallelCallsRemembered(t *testing.T) {
	t.Parallel()
	yes := true
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.ModelAliases = map[string][]config.Target{"agent": {{ModelID: testModel}}}
	cfg.AliasDefaults = map[string]config.AliasDefaults{"agent": {Defaults: config.Defaults{ParallelToolCalls: &yes}}}
	cfg.Keys = []config.Key{{Name: "pinned", Key: pinnedKey, Defaults: config.Defaults{ParallelToolCalls: &yes}}}
	cfg.APIKeys = []string{otherKey}
	clock := clocktest.New(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	g := start(t, cfg, gateway.WithClock(clock.Now))

	calls := firstTurn(t, g, testKey, agentUA, testModel, "")
	require.Len(t, calls, 2, "nothing known of the client yet")
	assert.Empty(t, g.logs.FilterMessage(learned).All())
	answerFirst(t, g, testKey, agentUA, calls)
	answerFirst(t, g, testKey, agentUA, calls) // known already: no second line
	lines := g.logs.FilterMessage(learned).All()
	require.Len(t, lines, 1, "one info line when learned")
	assert.Equal(t, agentUA, lines[0].ContextMap()["user_agent"])
	assert.Equal(t, 24*time.Hour, lines[0].ContextMap()["ttl"])
	assert.InDelta(t, 1, metricValue(t, g, "gateway_parallel_calls_learned_total", nil), 0)
	disabled := metricValue(t, g, "gateway_parallel_calls_disabled_total", nil)

	assert.Len(t, firstTurn(t, g, testKey, agentUA, testModel, ""), 1, "the next conversation starts with parallel calls off")
	assert.InDelta(t, disabled+1, metricValue(t, g, "gateway_parallel_calls_disabled_total", nil), 0, "counted as turned off")
	assert.Len(t, firstTurn(t, g, testKey, agentUA, testModel, `,"parallel_tool_calls":true`), 2, "the request's own value wins")
	assert.Len(t, firstTurn(t, g, testKey, agentUA, "agent", ""), 2, "so does its alias's setting")
	assert.Len(t, firstTurn(t, g, testKey, "curl/8.5.0", testModel, ""), 2, "another User-Agent is another client")
	assert.Len(t, firstTurn(t, g, otherKey, agentUA, testModel, ""), 2, "so is another key")

	// A key whose settings keep parallel calls on is neither turned off nor learned.
	answerFirst(t, g, pinnedKey, agentUA, firstTurn(t, g, pinnedKey, agentUA, testModel, ""))
	assert.Len(t, firstTurn(t, g, pinnedKey, agentUA, testModel, ""), 2)
	assert.InDelta(t, 1, metricValue(t, g, "gateway_parallel_calls_learned_total", nil), 0)

	clock.Advance(24*time.Hour - time.Second)
	assert.Len(t, firstTurn(t, g, testKey, agentUA, testModel, ""), 1, "still known within the TTL")
	clock.Advance(time.Second)
	assert.Len(t, firstTurn(t, g, testKey, agentUA, testModel, ""), 2, "forgotten after it")
}

// parallelEntry is the Redis key of the memory of the client key with ua: the key's
// identity (the first 8 hex digits of its SHA-256) and the User-Agent, each written with
// its length, digested.
func parallelEntry(key, ua string) string {
	sum := sha256.Sum256([]byte(key))
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{hex.EncodeToString(sum[:4]), ua} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return "llmgw:parallel:" + hex.EncodeToString(h.Sum(nil))
}

// TestParallelMemorySharedByReplicas: what one replica learned of a client, the other
// applies through the shared Redis; the entry expires after parallel_memory_ttl.
func TestParallelMemorySharedByReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	_, one, two := replicas(t, srv.URL())
	answerFirst(t, one, testKey, agentUA, firstTurn(t, one, testKey, agentUA, testModel, ""))
	require.Len(t, one.logs.FilterMessage(learned).All(), 1)

	ttl, err := strconv.Atoi(strings.TrimPrefix(srv.Do("PTTL", parallelEntry(testKey, agentUA)), ":"))
	require.NoError(t, err)
	assert.InDelta(t, (24 * time.Hour).Milliseconds(), ttl, float64(time.Minute.Milliseconds()), "kept for parallel_memory_ttl")

	assert.Len(t, firstTurn(t, two, testKey, agentUA, testModel, ""), 1, "the other replica knows the client")
	assert.Empty(t, two.logs.FilterMessage(learned).All(), "it did not learn it itself")
	assert.InDelta(t, 0, metricValue(t, two, "gateway_parallel_calls_learned_total", nil), 0)
	assert.Len(t, firstTurn(t, two, otherKey, agentUA, testModel, ""), 2, "another key is another client")
	for _, g := range []started{one, two} {
		assert.InDelta(t, 0, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": "get"}), 0)
		assert.InDelta(t, 0, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": "put"}), 0)
	}

	// Nothing of the User-Agent or the key reaches Redis in the clear.
	assert.NotContains(t, srv.Do("GET", parallelEntry(testKey, agentUA)), "gollm")
}
