package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// Shared state (docs/PROTOCOL.md 14.3): two gateways in this process, as two replicas,
// each with its own Redis client, in front of one real redis-server and one simulator.

// otherKey is a second client key, whose conversations are not testKey's.
const otherKey = "other-key-0123456789"

// onRedis points cfg at the Redis at url, for tests whose subject is what the replicas
// share, not Redis's latency: on a busy 2-core machine a call (the first one makes a
// connection, then loads the script) can take more than the default redis_timeout, 100 ms,
// and a call that times out goes on without Redis: limits fail open, values stay local.
func onRedis(cfg *config.Config, url string) {
	cfg.RedisURL = url
	cfg.RedisTimeout = 5 * time.Second
}

// replicas starts two gateways sharing the Redis at url and a recorded simulator.
func replicas(t *testing.T, url string) (*recordedSim, started, started) {
	t.Helper()
	sim := recordSim(t)
	cfg := defaultConfig(t)
	onRedis(&cfg, url)
	cfg.APIKeys = []string{otherKey}
	return sim, start(t, cfg, sim.upstream()), start(t, cfg, sim.upstream())
}

// firstToolTurn asks g, as testKey, for a tool call with thinking on, and returns the next
// turn's request as OpenAI clients build it (oaAnswer.param drops the reasoning blocks)
// and the call's id.
func firstToolTurn(t *testing.T, g started) (oaRequest, string) {
	t.Helper()
	params := thinkingParams()
	_, resp := oaChat(t, g, testKey, params)
	msg := resp.Choices[0].Message
	requireThinkingBlock(t, msg, "thinking")
	require.Len(t, msg.ToolCalls, 1)
	params.Messages = append(params.Messages, msg.param(), oaToolResult(`{"temp_c":21}`, msg.ToolCalls[0].ID))
	return params, msg.ToolCalls[0].ID
}

// nextTurn sends params to g with key, which the simulator, like Bedrock, must accept, and
// returns the answer's x-gateway-thinking.
func nextTurn(t *testing.T, g started, key string, params oaRequest) string {
	t.Helper()
	httpResp, _ := oaChat(t, g, key, params)
	return httpResp.Header.Get("X-Gateway-Thinking")
}

// sharedEntry is the Redis key of the reasoning of the turn whose one call is callID,
// stored for the client key key.
func sharedEntry(key, callID string) string {
	sum := sha256.Sum256([]byte(key))
	id := hex.EncodeToString(sum[:4])
	return fmt.Sprintf("llmgw:reasoning:%d:%s:%s", len(id), id, callID)
}

// requireStatus requires hello with key to get status from g's Nirmata surface.
func requireStatus(t *testing.T, g started, key string, status int) {
	t.Helper()
	resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+key, hello)
	require.Equal(t, status, resp.StatusCode, string(body))
}

// readyz returns /readyz's status and body.
func readyz(t testing.TB, g started) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + g.HTTP + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestReasoningSharedByReplicas: a reasoning block one replica kept is restored by the
// other when an OpenAI client, which dropped it, sends the next tool turn there; Bedrock's
// stand-in accepts the turn. Another key's request finds nothing.
func TestReasoningSharedByReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sim, one, two := replicas(t, srv.URL())
	params, callID := firstToolTurn(t, one)
	assert.Equal(t, ":1", srv.Do("EXISTS", sharedEntry(testKey, callID)), "replica one wrote the turn to Redis")

	assert.Equal(t, "restored", nextTurn(t, two, testKey, params))
	assert.InDelta(t, 1, metricValue(t, two, "gateway_reasoning_restored_total", map[string]string{"model": testModel}), 0)
	assert.InDelta(t, 0, metricValue(t, one, "gateway_reasoning_restored_total", nil), 0)
	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 2)
	msgs := reqs[1]["messages"].([]any)
	assistant := msgs[len(msgs)-2].(map[string]any)["content"].([]any)
	assert.Contains(t, assistant[0], "reasoningContent", "the blocks first in the tool turn")
	assert.Contains(t, reqs[1]["additionalModelRequestFields"], "thinking", "thinking stayed on")

	assert.Equal(t, "disabled-missing-signature", nextTurn(t, two, otherKey, params), "another key reads nothing")
	for _, g := range []started{one, two} {
		for _, op := range []string{"incr", "counts", "put", "get"} {
			assert.InDelta(t, 0, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": op}), 0, op)
		}
		assert.InDelta(t, 1, metricValue(t, g, "gateway_store_up", nil), 0)
	}
}

// TestRedisOutage: with Redis stopped mid-run, both replicas still serve; each keeps its
// own turns and says what failed (counted, one warning, /readyz still 200 naming the
// store), and limits fail open: a key over its requests_per_minute is served by both,
// uncounted. Once Redis is back on its port, the next answers are shared again and the
// key's requests are counted again, in the restarted (empty) Redis. The Redis has a
// password, which no log line shows.
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	const password = "s3cret-redis-pass"
	srv := redistest.StartWithPassword(t, password)
	_, one, two := limitedReplicas(t, srv.URL(), "keys:\n  - {name: ci, key: ci-key-0123456789, requests_per_minute: 1}\n", clocktest.New(at05))
	params, callID := firstToolTurn(t, one)
	require.Equal(t, ":1", srv.Do("EXISTS", sharedEntry(testKey, callID)))
	// The pings decide what /readyz says; the first may answer after the turn's write.
	requireReady(t, one, "redis")
	code, _ := readyz(t, one)
	assert.Equal(t, http.StatusOK, code)
	// ci's one request of the minute, on replica one, puts it over its limit on two.
	rpm := counterAt("ci", "rpm", at05)
	requireStatus(t, one, "ci-key-0123456789", http.StatusOK)
	requireStatus(t, two, "ci-key-0123456789", http.StatusTooManyRequests)
	require.Equal(t, "1", srv.Do("GET", rpm), "the refused request took its count back")

	srv.Stop()
	// Replica one answers and keeps the turn itself; writing it to Redis fails (refused,
	// or not sent once a ping found Redis gone).
	params, callID = firstToolTurn(t, one)
	assert.InDelta(t, 1, metricValue(t, one, "gateway_store_errors_total", map[string]string{"op": "put"}), 0)
	assert.Equal(t, "restored", nextTurn(t, one, testKey, params), "from its own cache")
	// Replica two cannot read it: it serves the turn without thinking.
	assert.Equal(t, "disabled-missing-signature", nextTurn(t, two, testKey, params))
	assert.InDelta(t, 1, metricValue(t, two, "gateway_store_errors_total", map[string]string{"op": "get"}), 0)
	for _, g := range []started{one, two} {
		// A failed call asks for a ping, and the ping says Redis is gone.
		requireReady(t, g, "redis unreachable")
		code, _ := readyz(t, g)
		assert.Equal(t, http.StatusOK, code, "ready without Redis")
		assert.InDelta(t, 0, metricValue(t, g, "gateway_store_up", nil), 0)
		warnings := g.logs.FilterMessageSnippet("the shared store failed").AllUntimed()
		require.NotEmpty(t, warnings)
		assert.Contains(t, []any{"put", "get", "ping"}, warnings[0].ContextMap()["op"])
		// Limits fail open: over its limit, ci is served, and the failed counting is counted.
		requireStatus(t, g, "ci-key-0123456789", http.StatusOK)
		assert.InDelta(t, 1, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": "incr"}), 0)
	}

	srv.Restart()
	// Each replica uses Redis again once its next ping (every 2 s) has an answer.
	requireReady(t, one, "redis")
	requireReady(t, two, "redis")
	params, callID = firstToolTurn(t, one)
	require.Equal(t, ":1", srv.Do("EXISTS", sharedEntry(testKey, callID)), "the answer reached the restarted Redis")
	assert.Equal(t, "restored", nextTurn(t, two, testKey, params), "shared again")
	// Counted again, by both, in the restarted Redis, which lost the count before the outage.
	require.Equal(t, "(nil)", srv.Do("GET", rpm))
	requireStatus(t, two, "ci-key-0123456789", http.StatusOK)
	assert.Equal(t, "1", srv.Do("GET", rpm))
	requireStatus(t, one, "ci-key-0123456789", http.StatusTooManyRequests)
	assert.Equal(t, "1", srv.Do("GET", rpm), "the refused request took its count back")
	for _, g := range []started{one, two} {
		code, body := readyz(t, g)
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `"store":"redis"`)
		assert.InDelta(t, 1, metricValue(t, g, "gateway_store_up", nil), 0)
		for _, e := range g.logs.AllUntimed() {
			assert.NotContains(t, fmt.Sprint(e.Message, e.ContextMap()), password)
		}
	}
	started := one.logs.FilterMessageSnippet("shared store").FilterFieldKey("addr").AllUntimed()
	require.Len(t, started, 1)
	assert.Equal(t, srv.Addr(), started[0].ContextMap()["addr"], "the address, not the URL")
}

// requireReady waits until g's /readyz names its store as store (its pings decide).
func requireReady(t testing.TB, g started, store string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, body := readyz(t, g)
		return strings.Contains(body, `"store":"`+store+`"`)
	}, 10*time.Second, 5*time.Millisecond, "store %q", store)
}

// TestStartsWithoutRedis: a gateway whose Redis does not answer starts at once and
// serves; /readyz is 200 and names the store as unreachable once its ping failed.
func TestStartsWithoutRedis(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there now
	sim := recordSim(t)
	cfg := defaultConfig(t)
	cfg.RedisURL = "redis://" + addr
	g := start(t, cfg, sim.upstream())
	params, _ := firstToolTurn(t, g)
	assert.InDelta(t, 1, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": "put"}), 0)
	requireReady(t, g, "redis unreachable")
	code, body := readyz(t, g)
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready","upstream":"bedrock","store":"redis unreachable"}`, body)
	assert.Equal(t, "restored", nextTurn(t, g, testKey, params), "the local cache serves")
}

// agentConfig has a key with token limits ("agent-key-0123456789") and an alias of two
// targets, "agent".
func agentConfig(t testing.TB) config.Config {
	t.Helper()
	return keysConfig(t, `keys:
  - {name: agent, key: agent-key-0123456789, tokens_per_minute: 100000000, tokens_per_day: 1000000000}
model_aliases:
  agent:
    targets:
      - {model_id: `+testModel+`}
      - {model_id: `+testModel+`, region: us-west-2}
`)
}

// silentRedisGateway starts a gateway of agentConfig whose Redis accepts connections and
// never answers, and waits until its first ping has found Redis unreachable. It pings
// once only, so a test can count the connections its requests make.
func silentRedisGateway(t testing.TB, sim *recordedSim, silent *redistest.Silent) started {
	t.Helper()
	cfg := agentConfig(t)
	cfg.RedisURL = silent.URL()
	cfg.RedisPingInterval = time.Hour
	g := start(t, cfg, sim.upstream())
	requireReady(t, g, "redis unreachable")
	return g
}

// agentToolTurn is a thinking tool-result turn to the alias "agent": the first turn of a
// tool conversation is asked of g, and the second (with the tool's result, the reasoning
// dropped as OpenAI clients drop it) returned unsent.
func agentToolTurn(t testing.TB, g started) oaRequest {
	t.Helper()
	params := thinkingParams()
	params.Model = "agent"
	_, resp := oaChat(t, g, "agent-key-0123456789", params)
	msg := resp.Choices[0].Message
	require.Len(t, msg.ToolCalls, 1)
	params.Messages = append(params.Messages, msg.param(), oaToolResult(`{"temp_c":21}`, msg.ToolCalls[0].ID))
	return params
}

// TestSilentRedisCostsNothing: once a gateway's ping found its Redis silent (it accepts
// connections and never answers), a thinking tool-result turn of a key with token limits
// to an alias of two targets is served without a call reaching Redis: no connection is
// made for the affinity read, the reservation, the answer's writes or the settlement;
// each is counted as made without the store, and the limits fail open. Before, each call
// waited its 100 ms: about 0.5 s added to that turn (BenchmarkSilentRedis measures it).
func TestSilentRedisCostsNothing(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	silent := redistest.StartSilent(t)
	g := silentRedisGateway(t, sim, silent)
	require.Equal(t, 1, silent.Connections(), "the ping's")

	params := agentToolTurn(t, g)
	httpResp, _ := oaChat(t, g, "agent-key-0123456789", params) // served
	assert.Equal(t, "restored", httpResp.Header.Get("X-Gateway-Thinking"), "from the replica's own cache")
	assert.Equal(t, 0, silent.Connections(), "no call reached Redis")
	for op, n := range map[string]float64{"get": 2, "incr": 4, "put": 4} {
		assert.InDelta(t, n, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": op}), 0, "%s: made without the store, two turns", op)
	}
	assert.InDelta(t, 0, metricValue(t, g, "gateway_rate_limited_total", nil), 0)
}

// BenchmarkSilentRedis measures a thinking tool-result turn of a key with token limits to
// an alias of two targets through a gateway without Redis, through one whose Redis is
// silent and known to be down (the difference is what a silent Redis adds once noticed),
// and through one that never pings its silent Redis (what it adds before: the budget,
// redis_timeout, for all the request's calls together).
func BenchmarkSilentRedis(b *testing.B) {
	sim := recordSim(b)
	for _, name := range []string{"no-redis", "silent-redis", "silent-redis-unnoticed"} {
		b.Run(name, func(b *testing.B) {
			var g started
			switch name {
			case "no-redis":
				g = start(b, agentConfig(b), sim.upstream())
			case "silent-redis":
				g = silentRedisGateway(b, sim, redistest.StartSilent(b))
			default:
				cfg := agentConfig(b)
				cfg.RedisURL = redistest.StartSilent(b).URL()
				cfg.RedisPingInterval = 0 // never
				g = start(b, cfg, sim.upstream())
			}
			params := agentToolTurn(b, g)
			for b.Loop() {
				oaChat(b, g, "agent-key-0123456789", params)
			}
		})
	}
}
