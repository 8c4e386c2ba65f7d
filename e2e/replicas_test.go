package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/gateway"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// One budget across replicas (docs/PROTOCOL.md 14.2, 14.3): two gateways on one Redis
// count a key's limits in the same counters, so between them they admit what one would.

// at05 is 10:20:05.4 UTC: 55 s (rounded up) remain of its minute, so the counters' Redis
// expiry (the window's rest plus a margin, in real time) outlasts any test run.
var at05 = time.Date(2026, 3, 2, 10, 20, 5, 400_000_000, time.UTC)

// limitedReplicas starts two gateways with the keys of yaml, sharing the Redis at url, the
// clock and a recorded simulator.
func limitedReplicas(t *testing.T, url, yaml string, clock *clocktest.Clock) (*recordedSim, started, started) {
	t.Helper()
	sim := recordSim(t)
	cfg := keysConfig(t, yaml)
	onRedis(&cfg, url)
	cfg.APIKeys = []string{otherKey}
	return sim, start(t, cfg, gateway.WithClock(clock.Now), sim.upstream()), start(t, cfg, gateway.WithClock(clock.Now), sim.upstream())
}

// redisClient is a go-redis client of its own for the test, to read what the gateways wrote.
func redisClient(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// counterAt is the Redis key of id's counter of tag ("rpm", "tpm") in the minute of now.
func counterAt(id, tag string, now time.Time) string {
	return "llmgw:lim:{" + id + "}:" + tag + ":" + strconv.FormatInt(now.Truncate(time.Minute).Unix(), 10)
}

// redisCount is the counter at key, 0 when there is none.
func redisCount(t *testing.T, rdb *redis.Client, key string) int64 {
	t.Helper()
	n, err := rdb.Get(t.Context(), key).Int64()
	if err == redis.Nil {
		return 0
	}
	require.NoError(t, err)
	return n
}

// surface answers hello for key on one of the gateway's surfaces and returns the usage the
// client read.
type surface struct {
	name string
	ask  func(t *testing.T, g started, key string) nirmataUsage
}

var (
	nirmataSurface = surface{"Nirmata REST", func(t *testing.T, g started, key string) nirmataUsage {
		t.Helper()
		resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "NIRMATA-API "+key, hello)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var a struct{ Usage nirmataUsage }
		require.NoError(t, json.Unmarshal(body, &a))
		return a.Usage
	}}
	openAISurface = surface{"OpenAI", func(t *testing.T, g started, key string) nirmataUsage {
		t.Helper()
		_, c := oaChat(t, g, key, helloParams)
		// Cache writes are in prompt_tokens and weigh as input does: the weighted sum
		// needs only the reads apart.
		return nirmataUsage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens,
			CachedTokens: c.Usage.PromptTokensDetails.CachedTokens}
	}}
	grpcSurface = surface{"gRPC", func(t *testing.T, g started, key string) nirmataUsage {
		t.Helper()
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+key)
		a, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, hello))
		require.NoError(t, err)
		u := a.GetUsage()
		return nirmataUsage{PromptTokens: int64(u.GetPromptTokens()), CompletionTokens: int64(u.GetCompletionTokens()),
			CachedTokens: int64(u.GetCachedTokens()), CacheWriteTokens: int64(u.GetCacheWriteTokens())}
	}}
)

// helloParams is hello on the OpenAI surface.
var helloParams = oaRequest{Model: testModel, Messages: []oaMessage{oaUser("hi")}}

// requireOpenAIRefusal requires key's refusal from g's OpenAI surface: 429,
// rate_limit_exceeded, the message and Retry-After.
func requireOpenAIRefusal(t *testing.T, g started, key, message, retryAfter string) {
	t.Helper()
	resp, apiErr := oaRefusal(t, g, key, helloParams, http.StatusTooManyRequests)
	assert.Equal(t, "rate_limit_exceeded", apiErr.Code)
	assert.Equal(t, message, apiErr.Message)
	assert.Equal(t, retryAfter, resp.Header.Get("Retry-After"))
}

// TestOneBudgetAcrossReplicas: two gateways on one Redis enforce one budget between them.
// Requests alternating between the replicas and their surfaces are admitted up to the
// key's requests_per_minute in total; the next is refused by either replica, on every
// surface; the Redis counter holds every arrival of both. The token counter in Redis is
// the sum of the weighted usage both replicas' clients read, and once that sum reaches
// tokens_per_minute, which neither replica's own share does, both refuse the key.
func TestOneBudgetAcrossReplicas(t *testing.T) {
	t.Parallel()
	// The simulator's answer to hello weighs 35 tokens on each surface: three answers,
	// two on replica one, cross 100 together and on neither replica alone.
	const requestLimit, tokenLimit = 4, 100
	srv := redistest.Start(t)
	rdb := redisClient(t, srv)
	clock := clocktest.New(at05)
	sim, one, two := limitedReplicas(t, srv.URL(), `keys:
  - {name: ci, key: ci-key-0123456789, requests_per_minute: `+strconv.Itoa(requestLimit)+`}
  - {name: tok, key: tok-key-0123456789, tokens_per_minute: `+strconv.Itoa(tokenLimit)+`}
`, clock)
	both := []started{one, two}

	// requests_per_minute: four admitted, alternating replicas and surfaces.
	rpm := counterAt("ci", "rpm", at05)
	for i, step := range []struct {
		g started
		s surface
	}{{one, nirmataSurface}, {two, openAISurface}, {one, grpcSurface}, {two, nirmataSurface}} {
		step.s.ask(t, step.g, "ci-key-0123456789")
		require.Equal(t, int64(i+1), redisCount(t, rdb, rpm), "after request %d, on %s", i+1, step.s.name)
	}
	ttl, err := rdb.PTTL(t.Context(), rpm).Result()
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= time.Minute, "the counter ends with its window: %v", ttl)

	// The fifth, on either replica and any surface, is refused.
	const rpmMessage = `key "ci" is over its requests_per_minute limit (4); retry in 55 s`
	for _, g := range both {
		requireNirmataRefusal(t, g, "ci-key-0123456789", hello, rpmMessage, "requests_per_minute", "55")
		requireGRPCRefusal(t, g, "ci-key-0123456789", hello, rpmMessage, 55*time.Second)
		requireOpenAIRefusal(t, g, "ci-key-0123456789", rpmMessage, "55")
		assert.EqualValues(t, 6, metricValue(t, g, "gateway_rate_limited_total", map[string]string{"key": "ci", "limit": "requests_per_minute"}))
	}
	assert.Equal(t, int64(requestLimit), sim.Requests(), "exactly the admitted requests reached Bedrock")
	assert.Equal(t, int64(requestLimit), redisCount(t, rdb, rpm), "only admitted requests stay counted: each refusal took its count back")

	// tokens_per_minute: answers on both replicas add up in one counter.
	tpm := counterAt("tok", "tpm", at05)
	var total, ofOne, ofTwo int64
	for _, step := range []struct {
		g     started
		s     surface
		share *int64
	}{{one, nirmataSurface, &ofOne}, {two, openAISurface, &ofTwo}, {one, grpcSurface, &ofOne}} {
		require.Less(t, total, int64(tokenLimit), "admitted below the limit")
		w := step.s.ask(t, step.g, "tok-key-0123456789").bedrock().weighted()
		require.Positive(t, w, step.s.name)
		total += w
		*step.share += w
		require.Equal(t, total, redisCount(t, rdb, tpm), "after the answer on %s", step.s.name)
	}
	require.GreaterOrEqual(t, total, int64(tokenLimit), "the simulator's usage changed: tokenLimit must lie above the first two answers and at most all three")
	require.Less(t, max(ofOne, ofTwo), int64(tokenLimit), "neither replica alone reached the limit")

	const tpmMessage = `key "tok" is over its tokens_per_minute limit (100); retry in 55 s`
	requests := sim.Requests()
	for _, g := range both {
		requireNirmataRefusal(t, g, "tok-key-0123456789", hello, tpmMessage, "tokens_per_minute", "55")
		requireGRPCRefusal(t, g, "tok-key-0123456789", hello, tpmMessage, 55*time.Second)
		requireOpenAIRefusal(t, g, "tok-key-0123456789", tpmMessage, "55")
	}
	assert.Equal(t, requests, sim.Requests(), "refusals cost no Bedrock call")
	assert.Equal(t, total, redisCount(t, rdb, tpm), "nor tokens")
}
