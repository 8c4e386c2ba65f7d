package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/gateway"
	"github.com/nirmata/llm-gateway/internal/redistest"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Token limits under concurrency and calls left early (docs/PROTOCOL.md 14.2): each request
// reserves its estimated tokens as it is admitted and settles to what it used, so a burst
// cannot pass a limit by more than one request's reservation, and a call the client leaves
// counts at least its input.

// gatedSim is the simulator behind a gate: every Bedrock call waits at it until the test
// opens it, so a test holds many calls in flight at once without timing them.
type gatedSim struct {
	url     string
	arrived atomic.Int64
	open    chan struct{}
	once    sync.Once
}

// startGatedSim serves a gated simulator.
func startGatedSim(t *testing.T) *gatedSim {
	t.Helper()
	g := &gatedSim{open: make(chan struct{})}
	sim := bedrocksim.New(bedrocksim.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.arrived.Add(1)
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { g.release(); srv.Close(); sim.Close() })
	g.url = srv.URL
	return g
}

// upstream makes the gateway reach g and try each call once.
func (g *gatedSim) upstream() gateway.Option { return upstreamAt(g.url, 1) }

// release opens the gate.
func (g *gatedSim) release() { g.once.Do(func() { close(g.open) }) }

// TestTokenLimitHoldsUnderABurst: 100 requests of about 1,000 tokens each (max_tokens 100),
// sent at once to two replicas sharing one Redis, against tokens_per_minute 2000, while no
// answer has come back: two are admitted with their reservations (their input and
// max_tokens: 0 and 1,100 are under the limit, 2,200 is not), every other one is refused by
// either replica, and the shared counter never holds more than the limit and one
// reservation; once the answers are in, it holds what they used.
func TestTokenLimitHoldsUnderABurst(t *testing.T) {
	t.Parallel()
	sim := startGatedSim(t)
	srv := redistest.Start(t)
	clock := clocktest.New(at05)
	cfg := keysConfig(t, "keys:\n  - {name: burst, key: burst-key-0123456789, tokens_per_minute: 2000}\n")
	// The subject is the reservations, not Redis's latency: a cold burst of 100 requests
	// on 2 cores can keep a call from the CPU for long.
	onRedis(&cfg, srv.URL())
	replicas := []started{start(t, cfg, sim.upstream(), gateway.WithClock(clock.Now)), start(t, cfg, sim.upstream(), gateway.WithClock(clock.Now))}
	question := strings.Repeat("pods ", 800) // 4,000 bytes: 1,000 tokens by estimate
	body := `{"max_tokens":100,"messages":[{"role":"user","content":"` + question + `"}]}`
	const reservation = 1000 + 100 // the question and max_tokens

	const burst = 100
	var refused, served atomic.Int64
	var wg sync.WaitGroup
	answers := make(chan []byte, burst)
	for i := range burst {
		wg.Go(func() {
			resp, answer := post(t, "http://"+replicas[i%2].HTTP+"/llm-apps/chat", "Bearer burst-key-0123456789", body)
			switch resp.StatusCode {
			case http.StatusTooManyRequests:
				assert.Contains(t, string(answer), `"limit":"tokens_per_minute"`)
				refused.Add(1)
			case http.StatusOK:
				served.Add(1)
				answers <- answer
			default:
				t.Errorf("status %d: %s", resp.StatusCode, answer)
			}
		})
	}
	// Every request has either reached the simulator, where it waits, or been refused.
	require.Eventually(t, func() bool { return sim.arrived.Load()+refused.Load() == burst }, 20*time.Second, 5*time.Millisecond)
	rdb := redisClient(t, srv)
	counter := counterAt("burst", "tpm", at05)
	inFlight := redisCount(t, rdb, counter)
	assert.Equal(t, int64(2), sim.arrived.Load(), "two requests admitted while their reservations stand")
	assert.Equal(t, int64(2*reservation), inFlight, "the counter holds their reservations: at most one over the limit")

	sim.release()
	wg.Wait()
	close(answers)
	assert.Equal(t, int64(2), served.Load())
	assert.Equal(t, int64(burst-2), refused.Load())
	var used int64
	for answer := range answers {
		var a struct{ Usage nirmataUsage }
		require.NoError(t, json.Unmarshal(answer, &a))
		used += a.Usage.bedrock().weighted()
	}
	assert.Equal(t, used, redisCount(t, rdb, counter), "settled to what the answers used")
}

// TestLeftCallsCountTheirInput: a call the client leaves before Bedrock answers, unary or
// streamed, counts against its key's token limits at least its input by estimate: the
// messages and the tools with their descriptions and schemas (100 tools of 4,000-character
// descriptions: about 100,000 tokens), not the nothing it used to count.
func TestLeftCallsCountTheirInput(t *testing.T) {
	t.Parallel()
	sim := startGatedSim(t)
	clock := clocktest.New(at37)
	counters := store.NewMemory(clock.Now)
	cfg := keysConfig(t, "keys:\n  - {name: agent, key: agent-key-0123456789, tokens_per_day: 100000000}\n")
	g := start(t, cfg, sim.upstream(), gateway.WithClock(clock.Now), gateway.WithCounters(counters))
	var tools []string
	for i := range 100 {
		tools = append(tools, fmt.Sprintf(`{"type":"function","function":{"name":"tool_%d","description":"%s","parameters":{"type":"object"}}}`,
			i, strings.Repeat("d", 4000)))
	}
	body := `{"messages":[{"role":"user","content":"hi"}],"tools":[` + strings.Join(tools, ",") + `]}`
	const input = 100 * 4000 / 4
	day := windowKeys("agent", at37)[1]

	for i, query := range []string{"", "?stream=true"} {
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+g.HTTP+"/llm-apps/chat"+query, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer agent-key-0123456789")
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		require.Eventually(t, func() bool { return sim.arrived.Load() == int64(i+1) }, 10*time.Second, 5*time.Millisecond,
			"the call reached Bedrock")
		cancel() // the client leaves while Bedrock works on it
		<-done
		// Settled: its input, no longer its reservation (the input and maxTokens).
		require.Eventually(t, func() bool {
			v, err := counters.Counts(t.Context(), day)
			return err == nil && v[0] >= int64(i+1)*input && v[0] < int64(i+1)*(input+1000)
		}, 10*time.Second, 5*time.Millisecond, "%q: a call left early counts its input", query)
	}
}

// TestRepairAttemptsAreAdmitted: with tool_validation repair and a model whose calls never
// match their schema, each repair attempt is a model call admitted against the key's token
// limits like the request itself: attempts stop once the window has no room, rather than
// max_repair_attempts multiplying what one admission let through; the invalid calls go
// back with their violations, and the window holds what the calls used.
func TestRepairAttemptsAreAdmitted(t *testing.T) {
	t.Parallel()
	sim := recordSim(t, "invalid_tool_args,times=100")
	clock := clocktest.New(at37)
	counters := store.NewMemory(clock.Now)
	cfg := keysConfig(t, "max_repair_attempts: 10\nkeys:\n  - {name: fixer, key: fixer-key-0123456789, tokens_per_minute: 6000, tool_validation: repair}\n")
	g := start(t, cfg, sim.upstream(), gateway.WithClock(clock.Now), gateway.WithCounters(counters))
	// Admitted: about 100 tokens in and default_max_tokens (4,096) out; the first repair
	// attempt reserves the input, the turn and its own output (about 8,300) on top of that,
	// under 6,000 before it; the second finds the window over 6,000.
	resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer fixer-key-0123456789", policyBody(testModel, false, ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	assert.Equal(t, "invalid", resp.Header.Get("X-Gateway-Tool-Validation"))
	assert.Len(t, sim.converseRequests(t), 2, "the call and one repair attempt, not eleven")
	var want int64
	for _, u := range sim.answers() {
		want += u.weighted()
	}
	used, err := counters.Counts(t.Context(), windowKeys("fixer", at37)[0])
	require.NoError(t, err)
	assert.Equal(t, []int64{want}, used, "settled to what both calls used")
}
