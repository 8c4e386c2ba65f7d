package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Keys with limits and defaults end to end (docs/PROTOCOL.md 14.1, 14.2, 14.6): the
// gateway on the simulator, on a clock the test moves, so that a window's edge is crossed
// without waiting for it.

// testKeyID is the identity of testKey, which has no name: 8 hex digits of its SHA-256.
var testKeyID = func() string { d := sha256.Sum256([]byte(testKey)); return hex.EncodeToString(d[:4]) }()

// at37 is 10:20:37.4 UTC: 23 s (rounded up) remain of its minute, 13 h 39 min 23 s of its
// day.
var at37 = time.Date(2026, 3, 2, 10, 20, 37, 400_000_000, time.UTC)

// keysConfig is the default configuration plus the YAML file text.
func keysConfig(t testing.TB, yaml string) config.Config {
	t.Helper()
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
	cfg, err := config.Load([]string{"--config", file}, func(string) string { return "" })
	require.NoError(t, err)
	return cfg
}

// limitBody is the exact Nirmata body of a key's refusal.
func limitBody(message, requestID, limit string) string {
	m, _ := json.Marshal(message)
	return `{"error":` + string(m) + `,"code":"resource_exhausted","request_id":"` + requestID + `","limit":"` + limit + `"}`
}

// requireNirmataRefusal sends body with key to the Nirmata surface, unary and both streams,
// and requires each answer to be the key's refusal: 429 before any byte, Retry-After, and
// the limit in the JSON body.
func requireNirmataRefusal(t *testing.T, g started, key, body, message, limit, retryAfter string) {
	t.Helper()
	for _, query := range []string{"", "?stream=true", "?chunked=true"} {
		resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat"+query, "NIRMATA-API "+key, body)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s: %s", query, answer)
		assert.Equal(t, retryAfter, resp.Header.Get("Retry-After"), query)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), query)
		assert.Equal(t, limitBody(message, resp.Header.Get("X-Request-Id"), limit), string(answer), query)
	}
}

// requireGRPCRefusal calls Chat and ChatStream with key and requires each to end with
// ResourceExhausted, the message, and a RetryInfo of retryAfter.
func requireGRPCRefusal(t *testing.T, g started, key, body, message string, retryAfter time.Duration) {
	t.Helper()
	client := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC))
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+key)
	_, unaryErr := client.Chat(ctx, grpcRequest(t, body))
	stream, err := client.ChatStream(ctx, grpcRequest(t, body))
	require.NoError(t, err)
	_, streamErr := stream.Recv()
	for _, err := range []error{unaryErr, streamErr} {
		st := status.Convert(err)
		require.Equal(t, codes.ResourceExhausted, st.Code(), st.Message())
		assert.Equal(t, message, st.Message())
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				retry = r
			}
		}
		require.NotNil(t, retry, "a RetryInfo detail")
		assert.Equal(t, retryAfter, retry.GetRetryDelay().AsDuration())
	}
}

// TestKeyRequestsPerMinute: a key over requests_per_minute is refused on every surface with
// 429 and Retry-After (gRPC: ResourceExhausted and RetryInfo), streams before any byte,
// without a Bedrock call, counted in gateway_rate_limited_total and logged under the key's
// name, never the key; a key without limits is served meanwhile, and the next minute opens
// the window again.
func TestKeyRequestsPerMinute(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	clock := clocktest.New(at37)
	g := start(t, keysConfig(t, "keys:\n  - {name: ci, key: ci-key-0123456789, requests_per_minute: 2}\n"), gateway.WithClock(clock.Now), sim.upstream())
	base := "http://" + g.HTTP
	for range 2 {
		resp, answer := post(t, base+"/llm-apps/chat", "Bearer ci-key-0123456789", hello)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	}

	const message = `key "ci" is over its requests_per_minute limit (2); retry in 23 s`
	requireNirmataRefusal(t, g, "ci-key-0123456789", hello, message, "requests_per_minute", "23")

	params := oaRequest{Model: testModel, Messages: []oaMessage{oaUser("hi")}}
	resp, apiErr := oaRefusal(t, g, "ci-key-0123456789", params, http.StatusTooManyRequests)
	assert.Equal(t, "rate_limit_error", apiErr.Type)
	assert.Equal(t, "rate_limit_exceeded", apiErr.Code)
	assert.Equal(t, message, apiErr.Message)
	assert.Equal(t, "23", resp.Header.Get("Retry-After"))
	assert.Empty(t, resp.Header.Get("X-Should-Retry"), "23 s: the SDKs may wait it out")
	params.Stream = true
	resp, _ = oaRefusal(t, g, "ci-key-0123456789", params, http.StatusTooManyRequests)
	assert.Equal(t, "23", resp.Header.Get("Retry-After"))

	requireGRPCRefusal(t, g, "ci-key-0123456789", hello, message, 23*time.Second)

	assert.Equal(t, int64(2), sim.Requests(), "a refused request costs no Bedrock call")
	assert.EqualValues(t, 7, metricValue(t, g, "gateway_rate_limited_total", map[string]string{"key": "ci", "limit": "requests_per_minute"}))
	resp, answer := post(t, base+"/llm-apps/chat", "Bearer "+testKey, hello)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a key without limits: %s", answer)

	// The access line is written once the answer is: wait for it.
	require.Eventually(t, func() bool {
		for _, e := range g.logs.FilterMessage("http").All() {
			if m := e.ContextMap(); m["key_id"] == "ci" && m["code"] == "resource_exhausted" && m["model"] == config.DefaultModel {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "the access log names the key, and the model the refused request was for")
	for _, e := range g.logs.All() {
		assert.NotContains(t, e.Message+fmt.Sprint(e.ContextMap()), "ci-key-0123456789", "a key in the log")
	}

	clock.Set(at37.Truncate(time.Minute).Add(time.Minute))
	resp, answer = post(t, base+"/llm-apps/chat?stream=true", "Bearer ci-key-0123456789", hello)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the next minute: %s", answer)
	assert.Equal(t, int64(4), sim.Requests())
}

// bedrockUsage is Converse's usage, as Bedrock names it.
type bedrockUsage struct {
	InputTokens, OutputTokens, CacheReadInputTokens, CacheWriteInputTokens int64
}

// weighted is what the token limits count of an answer (docs/PROTOCOL.md 14.2), with
// cache_read_weight 0.1.
func (u bedrockUsage) weighted() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheWriteInputTokens + int64(math.Round(0.1*float64(u.CacheReadInputTokens)))
}

// teeWriter keeps a copy of what is written.
type teeWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// nirmataUsage is the usage of a Nirmata answer or of a JSONL stream's done line.
type nirmataUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// bedrock is the usage in Bedrock's terms: prompt_tokens holds the cache reads and writes.
func (u nirmataUsage) bedrock() bedrockUsage {
	return bedrockUsage{InputTokens: u.PromptTokens - u.CachedTokens - u.CacheWriteTokens, OutputTokens: u.CompletionTokens,
		CacheReadInputTokens: u.CachedTokens, CacheWriteInputTokens: u.CacheWriteTokens}
}

// windowKeys are the counter keys of id's token windows at now: the minute's, the day's.
func windowKeys(id string, now time.Time) []string {
	return []string{
		"lim:{" + id + "}:tpm:" + strconv.FormatInt(now.Truncate(time.Minute).Unix(), 10),
		"lim:{" + id + "}:tpd:" + strconv.FormatInt(now.Truncate(24*time.Hour).Unix(), 10),
	}
}

// TestKeyTokensCounted: a key's token windows count, for each Bedrock answer, input +
// output + cache writes + 0.1 × cache reads: unary answers, each repair attempt (the key's
// tool_validation default has the call repaired), and a stream at its end.
func TestKeyTokensCounted(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "invalid_tool_args,times=1")
	clock := clocktest.New(at37)
	counters := store.NewMemory(clock.Now)
	cfg := keysConfig(t, "keys:\n  - {name: agent, key: agent-key-0123456789, tokens_per_minute: 100000000, tokens_per_day: 100000000, tool_validation: repair}\n")
	g := start(t, cfg, gateway.WithClock(clock.Now), gateway.WithCounters(counters), sim.upstream())
	base := "http://" + g.HTTP + "/llm-apps/chat"

	// An agent's second turn reads from the prompt cache what its first wrote.
	var cached int64
	for range 2 {
		resp, answer := post(t, base, "Bearer agent-key-0123456789", agentTurn(testModel, 1, ""))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
		var a struct{ Usage nirmataUsage }
		require.NoError(t, json.Unmarshal(answer, &a))
		cached = a.Usage.CachedTokens
	}
	require.Positive(t, cached, "the second turn hit the prompt cache")

	// A call that breaks its schema, repaired: two model calls.
	resp, answer := post(t, base, "Bearer agent-key-0123456789", policyBody(testModel, false, ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	require.Equal(t, "repaired", resp.Header.Get("X-Gateway-Tool-Validation"), "the key's tool_validation: repair")
	unary := sim.answers()
	require.Len(t, unary, 4, "two turns, and a call with its repair")

	// A stream counts once it ends.
	stream := streamPostKey(t, base+"?stream=true", "agent-key-0123456789", agentTurn(testModel, 2, ""))
	require.Equal(t, http.StatusOK, stream.StatusCode)
	done := lastJSONLLine(t, stream.Body)
	require.Equal(t, "done", done.Type)

	var want int64 // with cache reads in it (cached > 0), unweighted counts would differ
	for _, u := range append(unary, done.Usage.bedrock()) {
		want += u.weighted()
	}
	used, err := counters.Counts(t.Context(), windowKeys("agent", at37)...)
	require.NoError(t, err)
	assert.Equal(t, []int64{want, want}, used, "the minute and the day")
}

// TestKeyStreamLeftEarly: a stream the client leaves before Bedrock's usage arrives is
// counted against the key's token limits by estimate (its messages and what it passed on,
// at 4 bytes a token), so leaving streams early does not spend tokens uncounted.
func TestKeyStreamLeftEarly(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(at37)
	counters := store.NewMemory(clock.Now)
	cfg := keysConfig(t, "keys:\n  - {name: agent, key: agent-key-0123456789, tokens_per_minute: 100000000, tokens_per_day: 100000000}\n")
	cfg.Sim.Enabled = true
	cfg.Sim.DeltaDelay = 300 * time.Millisecond // the answer takes seconds; reading its first line, far less
	g := start(t, cfg, gateway.WithClock(clock.Now), gateway.WithCounters(counters))
	question := strings.Repeat("How are the pods doing? ", 40)
	body := `{"messages":[{"role":"user","content":"` + question + `"}]}`

	leaveStream(t, g, "agent-key-0123456789", body)

	// The gateway counts once it has closed the stream: wait for that, bounded.
	var used []int64
	var err error
	require.Eventually(t, func() bool {
		used, err = counters.Counts(t.Context(), windowKeys("agent", at37)...)
		return err == nil && used[0] > 0
	}, 10*time.Second, 5*time.Millisecond, "the stream left early was never counted")
	assert.Equal(t, used[0], used[1], "the minute and the day")
	assert.GreaterOrEqual(t, used[0], int64(len(question)/4), "at least its question")
}

// leaveStream starts a JSONL stream of body with key, reads its first line (content) and
// leaves: the client cancels and closes the connection. It returns the response.
func leaveStream(t *testing.T, g started, key, body string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+g.HTTP+"/llm-apps/chat?stream=true", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, first, "content")
	cancel()
	resp.Body.Close()
	return resp
}

// streamPostKey posts body with key and returns the response, its body unread.
func streamPostKey(t *testing.T, url, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// lastJSONLLine reads a JSONL stream to its end and returns its last line.
func lastJSONLLine(t *testing.T, r io.Reader) (last struct {
	Type  string
	Usage nirmataUsage
}) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		require.NoError(t, json.Unmarshal(sc.Bytes(), &last), sc.Text())
	}
	require.NoError(t, sc.Err())
	return last
}

// TestKeyTokenLimits: a key is refused once it has used up tokens_per_minute or
// tokens_per_day (the answer that crosses a limit is served whole), on every surface, until
// its window ends; a day's Retry-After tells the OpenAI SDKs not to retry.
func TestKeyTokenLimits(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	clock := clocktest.New(at37)
	g := start(t, keysConfig(t, `keys:
  - {name: small, key: small-key-0123456789, tokens_per_minute: 10}
  - {name: daily, key: daily-key-0123456789, tokens_per_day: 10}
`), gateway.WithClock(clock.Now), sim.upstream())
	base := "http://" + g.HTTP

	for _, key := range []string{"small-key-0123456789", "daily-key-0123456789"} {
		resp, answer := post(t, base+"/llm-apps/chat", "Bearer "+key, hello)
		require.Equal(t, http.StatusOK, resp.StatusCode, "the first answer overshoots: %s", answer)
	}
	requireNirmataRefusal(t, g, "small-key-0123456789", hello, `key "small" is over its tokens_per_minute limit (10); retry in 23 s`, "tokens_per_minute", "23")
	requireGRPCRefusal(t, g, "small-key-0123456789", hello, `key "small" is over its tokens_per_minute limit (10); retry in 23 s`, 23*time.Second)
	const dayLeft = "49163" // 13 h 39 min 22.6 s, rounded up
	requireNirmataRefusal(t, g, "daily-key-0123456789", hello, `key "daily" is over its tokens_per_day limit (10); retry in `+dayLeft+` s`, "tokens_per_day", dayLeft)

	// The OpenAI surface: x-should-retry false keeps the official clients from retrying
	// (TestOpenAIShouldRetry shows openai-go obeying it).
	refusals := func() float64 {
		return metricValue(t, g, "gateway_rate_limited_total", map[string]string{"key": "daily", "limit": "tokens_per_day"})
	}
	before := refusals()
	oaResp, apiErr := oaRefusal(t, g, "daily-key-0123456789", oaRequest{Model: testModel, Messages: []oaMessage{oaUser("hi")}}, http.StatusTooManyRequests)
	assert.Equal(t, "rate_limit_error", apiErr.Type)
	assert.Equal(t, "rate_limit_exceeded", apiErr.Code)
	assert.Equal(t, dayLeft, oaResp.Header.Get("Retry-After"))
	assert.Equal(t, "false", oaResp.Header.Get("X-Should-Retry"))
	assert.Equal(t, before+1, refusals())
	assert.Equal(t, int64(2), sim.Requests(), "refusals cost no Bedrock call")
	assert.EqualValues(t, 5, metricValue(t, g, "gateway_rate_limited_total", map[string]string{"key": "small", "limit": "tokens_per_minute"}))

	// The next minute: the minute's limit opens, the day's does not.
	clock.Set(at37.Truncate(time.Minute).Add(time.Minute))
	resp, answer := post(t, base+"/llm-apps/chat", "Bearer small-key-0123456789", hello)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	resp, answer = post(t, base+"/llm-apps/chat", "Bearer daily-key-0123456789", hello)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(answer))
	assert.Equal(t, "49140", resp.Header.Get("Retry-After"))
	// The next day opens it.
	clock.Set(at37.Truncate(24 * time.Hour).Add(24 * time.Hour))
	resp, answer = post(t, base+"/llm-apps/chat", "Bearer daily-key-0123456789", hello)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
}

// TestKeyDefaults: a key's defaults beat its alias's, which beat the gateway's, and a
// request's own values beat them all, as the Converse requests the simulator received
// show; requestMetadata names the calling key, never holding the key.
func TestKeyDefaults(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	g := start(t, keysConfig(t, `model_aliases:
  agent:
    targets: [{model_id: `+testModel+`}]
    parallel_tool_calls: true
    max_tool_rounds: 5
    reasoning_effort: low
keys:
  - name: strict
    key: strict-key-0123456789
    parallel_tool_calls: false
    max_tool_rounds: 1
    reasoning_effort: medium
`), sim.upstream())
	type sent struct {
		budget   any  // thinking.budget_tokens, nil without thinking
		parallel bool // no disable_parallel_tool_use
		spent    bool // the tool budget is spent
		key      string
	}
	for _, tt := range []struct {
		name, key, model string
		rounds           int
		extra            string
		want             sent
	}{
		{"the alias's", testKey, "agent", 0, "", sent{budget: 1024.0, parallel: true, key: testKeyID}},
		{"the key's over the alias's", "strict-key-0123456789", "agent", 0, "", sent{budget: 4096.0, key: "strict"}},
		{"the request's over the key's", "strict-key-0123456789", "agent", 0, `,"reasoning_effort":"high","parallel_tool_calls":true`, sent{budget: 16384.0, parallel: true, key: "strict"}},
		{"the key's rounds over the alias's", "strict-key-0123456789", "agent", 1, "", sent{spent: true, key: "strict"}},
		{"the request's rounds over the key's", "strict-key-0123456789", "agent", 1, `,"max_tool_rounds":2`, sent{key: "strict"}},
		{"the alias's rounds", testKey, "agent", 1, "", sent{parallel: true, key: testKeyID}},
		{"the key's over the gateway's", "strict-key-0123456789", testModel, 0, "", sent{budget: 4096.0, key: "strict"}},
		{"the gateway's", testKey, testModel, 0, "", sent{parallel: true, key: testKeyID}},
	} {
		before := len(sim.converseRequests(t))
		resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+tt.key, agentTurn(tt.model, tt.rounds, tt.extra))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tt.name, answer)
		reqs := sim.converseRequests(t)
		require.Len(t, reqs, before+1, tt.name)
		r := reqs[before]
		fields, _ := r["additionalModelRequestFields"].(map[string]any)
		var got sent
		if thinking, ok := fields["thinking"].(map[string]any); ok {
			got.budget = thinking["budget_tokens"]
		}
		choice, _ := fields["tool_choice"].(map[string]any)
		got.parallel = choice["disable_parallel_tool_use"] != true
		system, _ := r["system"].([]any)
		for _, s := range system {
			text, _ := s.(map[string]any)["text"].(string)
			got.spent = got.spent || strings.Contains(text, "The tool budget for this task is used up.")
		}
		got.key, _ = r["requestMetadata"].(map[string]any)["gateway_key"].(string)
		if tt.want.spent { // no tools offered: neither thinking nor the parallel field matters
			got.budget, got.parallel = nil, false
		}
		assert.Equal(t, tt.want, got, tt.name)
		assert.Equal(t, tt.want.spent, resp.Header.Get("X-Gateway-Tool-Budget") == "exhausted", tt.name)
	}
}

// TestKeyToolValidationDefault: tool_validation, the request's, else the key's, else the
// alias's, else the gateway's, as the number of model calls shows when every call the
// simulator makes breaks its schema (repair: one more call, max_repair_attempts 1).
func TestKeyToolValidationDefault(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "invalid_tool_args,times=100")
	g := start(t, keysConfig(t, `max_repair_attempts: 1
model_aliases:
  agent: {targets: [{model_id: `+testModel+`}], tool_validation: "off"}
keys:
  - {name: fixer, key: fixer-key-0123456789, tool_validation: repair}
`), sim.upstream())
	for _, tt := range []struct {
		name, key, model, extra string
		calls                   int
		outcome                 string
	}{
		{"the alias's", testKey, "agent", "", 1, ""},
		{"the key's over the alias's", "fixer-key-0123456789", "agent", "", 2, "invalid"},
		{"the request's over the key's", "fixer-key-0123456789", "agent", `,"tool_validation":"report"`, 1, "invalid"},
		{"the key's over the gateway's", "fixer-key-0123456789", testModel, "", 2, "invalid"},
		{"the gateway's", testKey, testModel, "", 1, "invalid"},
	} {
		before := len(sim.converseRequests(t))
		resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+tt.key, policyBody(tt.model, false, tt.extra))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tt.name, answer)
		assert.Len(t, sim.converseRequests(t), before+tt.calls, tt.name)
		assert.Equal(t, tt.outcome, resp.Header.Get("X-Gateway-Tool-Validation"), tt.name)
	}
}
