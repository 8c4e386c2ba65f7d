package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// Shared state (docs/PROTOCOL.md 14.3): two gateways in this process, as two replicas,
// each with its own Redis client, in front of one real redis-server and one simulator.

// otherKey is a second client key, whose conversations are not testKey's.
const otherKey = "other-key-0123456789"

// replicas starts two gateways sharing the Redis at url and a recorded simulator.
func replicas(t *testing.T, url string) (*recordedSim, started, started) {
	t.Helper()
	sim := recordSim(t)
	cfg := defaultConfig(t)
	cfg.RedisURL = url
	cfg.APIKeys = []string{otherKey}
	return sim, start(t, cfg), start(t, cfg)
}

func clientOf(g started, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL("http://"+g.HTTP+"/v1/"), option.WithAPIKey(key))
}

// firstToolTurn asks for a tool call with thinking on, and returns the next turn's
// params as agents on openai-go build them (ToParam drops the reasoning blocks) and the
// call's id.
func firstToolTurn(t *testing.T, client openai.Client) (openai.ChatCompletionNewParams, string) {
	t.Helper()
	params := thinkingParams()
	resp, err := client.Chat.Completions.New(t.Context(), params)
	require.NoError(t, err)
	msg := resp.Choices[0].Message
	require.Contains(t, msg.RawJSON(), `"thinking_blocks":[{"type":"thinking"`)
	require.Len(t, msg.ToolCalls, 1)
	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"temp_c":21}`, msg.ToolCalls[0].ID))
	return params, msg.ToolCalls[0].ID
}

// nextTurn sends params and returns the answer's x-gateway-thinking.
func nextTurn(t *testing.T, client openai.Client, params openai.ChatCompletionNewParams) string {
	t.Helper()
	var httpResp *http.Response
	_, err := client.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&httpResp))
	require.NoError(t, err, "the simulator, like Bedrock, accepts the turn")
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
func readyz(t *testing.T, g started) (int, string) {
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
	srv := redistest.Start(t)
	sim, one, two := replicas(t, srv.URL())
	params, callID := firstToolTurn(t, clientOf(one, testKey))
	assert.Equal(t, ":1", srv.Do("EXISTS", sharedEntry(testKey, callID)), "replica one wrote the turn to Redis")

	assert.Equal(t, "restored", nextTurn(t, clientOf(two, testKey), params))
	assert.InDelta(t, 1, metricValue(t, two, "gateway_reasoning_restored_total", map[string]string{"model": testModel}), 0)
	assert.InDelta(t, 0, metricValue(t, one, "gateway_reasoning_restored_total", nil), 0)
	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 2)
	msgs := reqs[1]["messages"].([]any)
	assistant := msgs[len(msgs)-2].(map[string]any)["content"].([]any)
	assert.Contains(t, assistant[0], "reasoningContent", "the blocks first in the tool turn")
	assert.Contains(t, reqs[1]["additionalModelRequestFields"], "thinking", "thinking stayed on")

	assert.Equal(t, "disabled-missing-signature", nextTurn(t, clientOf(two, otherKey), params), "another key reads nothing")
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
	const password = "s3cret-redis-pass"
	srv := redistest.StartWithPassword(t, password)
	_, one, two := limitedReplicas(t, srv.URL(), "keys:\n  - {name: ci, key: ci-key-0123456789, requests_per_minute: 1}\n", clocktest.New(at05))
	params, callID := firstToolTurn(t, clientOf(one, testKey))
	require.Equal(t, ":1", srv.Do("EXISTS", sharedEntry(testKey, callID)))
	code, body := readyz(t, one)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"store":"redis"`)
	// ci's one request of the minute, on replica one, puts it over its limit on two.
	rpm := counterAt("ci", "rpm", at05)
	requireStatus(t, one, "ci-key-0123456789", http.StatusOK)
	requireStatus(t, two, "ci-key-0123456789", http.StatusTooManyRequests)
	require.Equal(t, "1", srv.Do("GET", rpm), "the refused request took its count back")

	srv.Stop()
	// Replica one answers and keeps the turn itself; writing it to Redis fails.
	params, callID = firstToolTurn(t, clientOf(one, testKey))
	assert.InDelta(t, 1, metricValue(t, one, "gateway_store_errors_total", map[string]string{"op": "put"}), 0)
	assert.Equal(t, "restored", nextTurn(t, clientOf(one, testKey), params), "from its own cache")
	// Replica two cannot read it: it serves the turn without thinking.
	assert.Equal(t, "disabled-missing-signature", nextTurn(t, clientOf(two, testKey), params))
	assert.InDelta(t, 1, metricValue(t, two, "gateway_store_errors_total", map[string]string{"op": "get"}), 0)
	for _, g := range []started{one, two} {
		code, body := readyz(t, g)
		assert.Equal(t, http.StatusOK, code, "ready without Redis")
		assert.Contains(t, body, `"store":"redis unreachable"`)
		assert.InDelta(t, 0, metricValue(t, g, "gateway_store_up", nil), 0)
		warnings := g.logs.FilterMessageSnippet("the shared store failed").AllUntimed()
		require.NotEmpty(t, warnings)
		assert.Contains(t, []any{"put", "get", "ping"}, warnings[0].ContextMap()["op"])
		// Limits fail open: over its limit, ci is served, and the failed counting is counted.
		requireStatus(t, g, "ci-key-0123456789", http.StatusOK)
		assert.InDelta(t, 1, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": "incr"}), 0)
	}

	srv.Restart()
	// go-redis may hold off dialing for a moment after refused dials: answer new
	// conversations on replica one until one lands in Redis.
	deadline := time.Now().Add(10 * time.Second)
	for {
		params, callID = firstToolTurn(t, clientOf(one, testKey))
		if srv.Do("EXISTS", sharedEntry(testKey, callID)) == ":1" {
			break
		}
		require.True(t, time.Now().Before(deadline), "no answer reached the restarted Redis")
	}
	assert.Equal(t, "restored", nextTurn(t, clientOf(two, testKey), params), "shared again")
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

// TestStartsWithoutRedis: a gateway whose Redis does not answer starts at once and
// serves; /readyz is 200 and names the store as unreachable once a call failed.
func TestStartsWithoutRedis(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there now
	recordSim(t)
	cfg := defaultConfig(t)
	cfg.RedisURL = "redis://" + addr
	g := start(t, cfg)
	params, _ := firstToolTurn(t, clientOf(g, testKey))
	assert.InDelta(t, 1, metricValue(t, g, "gateway_store_errors_total", map[string]string{"op": "put"}), 0)
	code, body := readyz(t, g)
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready","upstream":"bedrock","store":"redis unreachable"}`, body)
	assert.Equal(t, "restored", nextTurn(t, clientOf(g, testKey), params), "the local cache serves")
}
