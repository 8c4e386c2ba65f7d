package core

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/quota"
	"github.com/nirmata/llm-gateway/internal/redistest"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/store"
)

// recordingCounters is store.Counters that records each call, and fails every call while
// failing is set.
type recordingCounters struct {
	store.Counters
	mu      sync.Mutex
	calls   []string
	failing bool
}

func (c *recordingCounters) Add(ctx context.Context, deltas ...store.Delta) ([]int64, bool, error) {
	c.mu.Lock()
	for _, d := range deltas {
		call := "add " + d.Key + " " + itoa(d.N)
		if d.Limit > 0 {
			call += " under " + itoa(d.Limit)
		}
		c.calls = append(c.calls, call)
	}
	failing := c.failing
	c.mu.Unlock()
	if failing {
		return nil, false, errors.New("store down")
	}
	return c.Counters.Add(ctx, deltas...)
}

func (c *recordingCounters) Counts(ctx context.Context, keys ...string) ([]int64, error) {
	c.mu.Lock()
	for _, k := range keys {
		c.calls = append(c.calls, "count "+k)
	}
	failing := c.failing
	c.mu.Unlock()
	if failing {
		return nil, errors.New("store down")
	}
	return c.Counters.Counts(ctx, keys...)
}

func (c *recordingCounters) took() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sentShared is a store.Shared that records the calls its Guard sent on to it: the time
// each was given, by its context's deadline (math.MaxInt64 without one).
type sentShared struct {
	store.Shared
	mu   sync.Mutex
	sent []time.Duration
}

func (s *sentShared) send(ctx context.Context) {
	given := time.Duration(math.MaxInt64)
	if d, ok := ctx.Deadline(); ok {
		given = time.Until(d)
	}
	s.mu.Lock()
	s.sent = append(s.sent, given)
	s.mu.Unlock()
}

func (s *sentShared) Add(ctx context.Context, deltas ...store.Delta) ([]int64, bool, error) {
	s.send(ctx)
	return s.Shared.Add(ctx, deltas...)
}

func (s *sentShared) Counts(ctx context.Context, keys ...string) ([]int64, error) {
	s.send(ctx)
	return s.Shared.Counts(ctx, keys...)
}

func (s *sentShared) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	s.send(ctx)
	return s.Shared.Put(ctx, key, value, ttl)
}

func (s *sentShared) Get(ctx context.Context, key string) ([]byte, bool, error) {
	s.send(ctx)
	return s.Shared.Get(ctx, key)
}

func (s *sentShared) GetMany(ctx context.Context, keys ...string) ([][]byte, error) {
	s.send(ctx)
	return s.Shared.GetMany(ctx, keys...)
}

// took returns the calls sent since the last call of took.
func (s *sentShared) took() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sent
	s.sent = nil
	return out
}

// counterKey is the counter of key "ci"'s window tag ("tpm", "tpd") holding now: the
// quota package's naming, written out (docs/PROTOCOL.md 14.2).
func counterKey(tag string, now time.Time) string {
	size := time.Minute
	if tag == "tpd" {
		size = 24 * time.Hour
	}
	return "lim:{ci}:" + tag + ":" + itoa(now.Truncate(size).Unix())
}

// keyService is a core without an upstream whose keys have the given policies, counting
// in counters on clock.
func keyService(keys map[string]quota.Limits, counters store.Counters, clock func() time.Time, defaultMaxTokens int) *Service {
	return New(nil, Options{
		DefaultModel: "us.anthropic.claude-sonnet-4-20250514-v1:0", MaxTools: 200, MaxMessages: 10, MaxMessageBytes: 2 << 20,
		Quota: quota.New(quota.Options{Keys: keys, Counters: counters, Now: clock, CacheReadWeight: 0.1}), DefaultMaxTokens: defaultMaxTokens,
	}, zap.NewNop())
}

// TestKeyLimits: what admission costs in store calls (none for a request without a key,
// or whose key has only defaults; one Add for the three limits), what it reserves (the
// input estimate and maxTokens), how a request settles to its usage, and the order of
// refusals; a refused request takes back everything it added, and a store that fails lets
// requests through.
func TestKeyLimits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 37, 0, time.UTC)
	clock := func() time.Time { return now }
	counters := &recordingCounters{Counters: store.NewMemory(clock)}
	s := New(nil, Options{
		DefaultModel: "us.anthropic.claude-sonnet-4-20250514-v1:0", MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		Quota: quota.New(quota.Options{Keys: map[string]quota.Limits{"ci": {RequestsPerMinute: 3, TokensPerMinute: 1000, TokensPerDay: 100000}},
			Counters: counters, Now: clock, CacheReadWeight: 0.1}),
		KeyDefaults: map[string]Defaults{"defaults": {ToolValidation: "repair"}},
	}, zap.NewNop())
	minute, day := itoa(now.Truncate(time.Minute).Unix()), itoa(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Unix())
	tpm, tpd, rpm := "lim:{ci}:tpm:"+minute, "lim:{ci}:tpd:"+day, "lim:{ci}:rpm:"+minute
	// 400 bytes of text, a 44-byte tool: 111 tokens in; max_tokens 100 out.
	prepare := func(keyID string) (*turn, error) {
		var res Result
		return s.prepared(t.Context(), &chat.Request{KeyID: keyID, MaxTokens: new(int32(100)),
			Messages: []chat.Message{{Role: chat.RoleUser, Content: strings.Repeat("word ", 80)}},
			Tools:    []chat.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{}}`)}}}, &res)
	}
	used := func() []int64 {
		t.Helper()
		v, err := counters.Counts(t.Context(), tpd, tpm, rpm)
		require.NoError(t, err)
		counters.took()
		return v
	}

	for _, id := range []string{"", "defaults", "unknown"} {
		p, err := prepare(id)
		require.NoError(t, err)
		assert.Nil(t, p.quota)
		assert.Empty(t, counters.took(), "key %q has no limit: no store call", id)
	}

	p, err := prepare("ci")
	require.NoError(t, err)
	assert.Equal(t, []string{"add " + tpd + " 211 under 100000", "add " + tpm + " 211 under 1000", "add " + rpm + " 1 under 3"},
		counters.took(), "one call: the reservation in both token windows and the request, each under its limit")

	// 60 input, 20 output, 10 cache writes, 50 cache reads weighted 0.1: 95 replace 211.
	p.quota.Count(chat.Usage{PromptTokens: 120, CompletionTokens: 20, CacheReadTokens: 50, CacheWriteTokens: 10}, pricing.Price{})
	p.quota.Settle(t.Context())
	assert.Equal(t, []string{"add " + tpd + " -116", "add " + tpm + " -116"}, counters.took(), "one call to settle")
	p.quota.Settle(t.Context())
	assert.Empty(t, counters.took(), "settled once")
	assert.Equal(t, []int64{95, 95, 1}, used())

	p, err = prepare("ci") // 95 < 1000: admitted, and 95+211 reserved
	require.NoError(t, err)
	p.quota.Count(chat.Usage{PromptTokens: 900}, pricing.Price{}) // more than reserved
	p.quota.Settle(t.Context())
	assert.Equal(t, []int64{995, 995, 2}, used())

	_, err = prepare("ci") // 995 < 1000: admitted though its reservation passes the limit
	require.NoError(t, err)
	assert.Equal(t, []int64{1206, 1206, 3}, used(), "the burst's overshoot: one reservation")

	_, err = prepare("ci") // the minute's tokens are at the limit: refused, the day's still fine
	var limited *quota.LimitError
	require.ErrorAs(t, err, &limited)
	assert.Equal(t, quota.LimitError{Key: "ci", Limit: quota.TokensPerMinute, Value: 1000, RetryAfter: 23 * time.Second}, *limited)
	assert.Equal(t, `key "ci" is over its tokens_per_minute limit (1000); retry in 23 s`, err.Error())
	f := fault.Classify(t.Context(), err)
	assert.Equal(t, fault.Failure{Kind: fault.KindRateLimited, Message: err.Error(), RetryAfter: 23 * time.Second, Limit: quota.TokensPerMinute}, f)
	assert.Len(t, counters.took(), 3, "one call, refused")
	assert.Equal(t, []int64{1206, 1206, 3}, used(), "a refused request adds nothing")

	// A key at its requests_per_minute limit, with tokens to spare.
	s.opts.Quota = quota.New(quota.Options{Keys: map[string]quota.Limits{"ci": {RequestsPerMinute: 3, TokensPerMinute: 1 << 40, TokensPerDay: 100000}},
		Counters: counters, Now: clock, CacheReadWeight: 0.1})
	_, err = prepare("ci")
	require.ErrorAs(t, err, &limited)
	assert.Equal(t, quota.LimitError{Key: "ci", Limit: quota.RequestsPerMinute, Value: 3, RetryAfter: 23 * time.Second}, *limited)
	assert.Equal(t, []int64{1206, 1206, 3}, used())

	counters.mu.Lock()
	counters.failing = true
	counters.mu.Unlock()
	p, err = prepare("ci")
	require.NoError(t, err, "a store that fails lets the request through")
	p.quota.Count(chat.Usage{PromptTokens: 5}, pricing.Price{})
	counters.mu.Lock()
	counters.failing = false
	counters.mu.Unlock()
	p.quota.Settle(t.Context())
	assert.Equal(t, []int64{1211, 1211, 3}, used(), "back by the request's end: what it used is counted, nothing reserved taken back")
}

// TestRepairReserves: each repair attempt is admitted as a model call: it reserves the
// request's input, the turn it answers and its own output before it is made, and is not
// made when a token window is at its limit; the request settles all its reservations.
func TestRepairReserves(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	counters := store.NewMemory(clock)
	s := keyService(map[string]quota.Limits{"ci": {TokensPerMinute: 1000}}, counters, clock, 0)
	var res Result
	p, err := s.prepared(t.Context(), &chat.Request{KeyID: "ci", MaxTokens: new(int32(100)),
		Messages: []chat.Message{{Role: chat.RoleUser, Content: strings.Repeat("x", 400)}}}, &res)
	require.NoError(t, err)
	key := counterKey("tpm", now)
	minute := func() int64 {
		v, err := counters.Counts(t.Context(), key)
		require.NoError(t, err)
		return v[0]
	}
	require.Equal(t, int64(200), minute(), "admitted: 100 in, 100 out")
	for want := int64(500); want <= 1100; want += 300 {
		require.True(t, p.quota.RepairAllowed(t.Context()), "under 1000")
		assert.Equal(t, want, minute(), "each attempt: 100 in, 100 of the turn, 100 out")
	}
	assert.False(t, p.quota.RepairAllowed(t.Context()), "at 1100, no room for another attempt")
	assert.Equal(t, int64(1100), minute())
	p.quota.Count(chat.Usage{PromptTokens: 150, CompletionTokens: 50}, pricing.Price{})
	p.quota.Settle(t.Context())
	assert.Equal(t, int64(200), minute(), "settled to what its calls used")
}

// TestReservationBoundsABurst: requests admitted at once, each reserving its tokens
// before any is answered, overshoot a token limit by less than one reservation however
// many arrive together; once settled, the window holds what they used.
func TestReservationBoundsABurst(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	counters := store.NewMemory(clock)
	s := keyService(map[string]quota.Limits{"ci": {TokensPerMinute: 2000}}, counters, clock, 96)
	const burst = 100
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted []*turn
		refused  int
	)
	for range burst {
		wg.Go(func() {
			var res Result
			p, err := s.prepared(t.Context(), &chat.Request{KeyID: "ci",
				Messages: []chat.Message{{Role: chat.RoleUser, Content: strings.Repeat("x", 4000)}}}, &res)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				var limited *quota.LimitError
				assert.ErrorAs(t, err, &limited)
				refused++
				return
			}
			admitted = append(admitted, p)
		})
	}
	wg.Wait()
	const reservation = 1000 + 96
	assert.Len(t, admitted, 2, "0 and 1096 are under 2000; 2192 is not")
	assert.Equal(t, burst-2, refused)
	key := counterKey("tpm", now)
	v, err := counters.Counts(t.Context(), key)
	require.NoError(t, err)
	assert.Equal(t, int64(2*reservation), v[0], "at most one reservation over the limit")
	for _, p := range admitted {
		p.quota.Count(chat.Usage{PromptTokens: 1000, CompletionTokens: 10}, pricing.Price{})
		p.quota.Settle(t.Context())
	}
	v, _ = counters.Counts(t.Context(), key)
	assert.Equal(t, []int64{2 * 1010}, v, "settled to what they used")
}

// TestSettleCutShort: a request cut short after it reached Bedrock settles at least its
// input estimate (messages, tools, the response_format schema) and the output it passed on;
// one that failed before Bedrock answered anything settles nothing.
func TestSettleCutShort(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	counters := store.NewMemory(clock)
	s := keyService(map[string]quota.Limits{"ci": {TokensPerDay: 1 << 40}}, counters, clock, 4096)
	tools := make([]chat.Tool, 100)
	for i := range tools {
		tools[i] = chat.Tool{Name: "tool_" + itoa(int64(i)), Description: strings.Repeat("d", 4000)}
	}
	req := func() *chat.Request {
		return &chat.Request{KeyID: "ci", Tools: tools, Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: strings.Repeat("s", 400)},
			{Role: chat.RoleUser, Content: strings.Repeat("u", 400)},
			{Role: chat.RoleUser, Parts: []chat.Part{{Image: &chat.ImageURL{URL: "data:image/png;base64,iVBORw0KGgo" + strings.Repeat("A", 1<<20+1)}}}},
		}}
	}
	key := counterKey("tpd", now)
	day := func() int64 {
		v, err := counters.Counts(t.Context(), key)
		require.NoError(t, err)
		return v[0]
	}
	var res Result
	p, err := s.prepared(t.Context(), req(), &res)
	require.NoError(t, err)
	in := p.quota.Input()
	// 800 bytes of messages, 100 tools of about 4,006 bytes, one image.
	assert.Equal(t, int64((800+100*4000+10*6+90*7)/4+1600), in, "an image is 1,600 tokens")
	assert.Equal(t, in+4096, day(), "reserved: input and maxTokens")
	p.quota.CutShort(400, pricing.Price{}) // a stream left after 400 bytes
	p.quota.Settle(t.Context())
	assert.Equal(t, in+100, day())

	p, err = s.prepared(t.Context(), req(), &res)
	require.NoError(t, err)
	p.quota.Settle(t.Context()) // refused upstream before any answer
	assert.Equal(t, in+100, day(), "nothing used, nothing counted")
}

// TestSettleAcrossWindows: a request admitted in one minute and settled in the next
// leaves its reservation in the minute that ended and adds only what it used beyond it to
// the new one; the day, still the same, is settled to what it used.
func TestSettleAcrossWindows(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 3, 1, 10, 20, 50, 0, time.UTC))
	counters := store.NewMemory(clock.Now)
	s := keyService(map[string]quota.Limits{"ci": {TokensPerMinute: 1 << 30, TokensPerDay: 1 << 40}}, counters, clock.Now, 0)
	var res Result
	p, err := s.prepared(t.Context(), &chat.Request{KeyID: "ci", MaxTokens: new(int32(100)),
		Messages: []chat.Message{{Role: chat.RoleUser, Content: strings.Repeat("x", 400)}}}, &res)
	require.NoError(t, err)
	m0 := counterKey("tpm", clock.Now())
	day := counterKey("tpd", clock.Now())
	clock.Advance(20 * time.Second)
	m1 := counterKey("tpm", clock.Now())
	p.quota.Count(chat.Usage{PromptTokens: 150, CompletionTokens: 150}, pricing.Price{}) // 300 for 200 reserved
	p.quota.Settle(t.Context())
	v, err := counters.Counts(t.Context(), m0, m1, day)
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 100, 300}, v, "m0 expired with its reservation; m1 gets the excess; the day what was used")
}

// TestStoreBudgetPerRequest: the store calls of one request, unary or streamed, share
// one budget, StoreTimeout (redis_timeout): with a Redis that hangs and is not yet known
// to be down, a key with token limits on an alias of two targets makes four calls (the
// affinity read, the reservation, the affinity write, the settlement at the end, a
// stream's at Close); the first is sent with the budget as its deadline (not its own
// timeout) and waits it out, and the others are not sent. The request is served, its
// limits failing open. What is counted is the calls the Guard sends, not the connections
// Redis accepts: go-redis dials in a goroutine of its own, which a loaded CPU may not run
// before the budget is out, and then the call that was sent made no connection.
func TestStoreBudgetPerRequest(t *testing.T) {
	t.Parallel()
	const first, second = "us.anthropic.claude-sonnet-4-20250514-v1:0", "us.amazon.nova-pro-v1:0"
	sim := bedrocksim.New(bedrocksim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); srv.Close() })
	client, err := bedrock.NewClient(t.Context(), aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
	}, bedrock.ClientOptions{SigV4Only: true})
	require.NoError(t, err)
	const budget = 50 * time.Millisecond
	r, err := store.NewRedis(redistest.StartSilent(t).URL(), time.Second) // without the budget, each call would wait this
	require.NoError(t, err)
	redis := &sentShared{Shared: r}
	m := metrics.New()
	guard := store.NewGuard(redis, store.GuardOptions{Name: "redis", Metrics: m, PingEvery: -1})
	t.Cleanup(func() { _ = guard.Close() })
	s := New(client, Options{
		Aliases:  map[string][]route.Target{"agent": {{ModelID: first}, {ModelID: second}}},
		MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20, UpstreamTimeout: time.Minute, MaxConcurrent: 4,
		Metrics: m, Shared: guard, StoreTimeout: budget,
		Quota: quota.New(quota.Options{Keys: map[string]quota.Limits{"ci": {TokensPerMinute: 1 << 30}}, Counters: guard, Metrics: m}),
	}, zap.NewNop())
	req := func() *chat.Request {
		return &chat.Request{KeyID: "ci", Model: "agent", Messages: []chat.Message{{Role: chat.RoleUser, Content: "Hello."}}}
	}
	errorsOf := func(op string) float64 {
		return counter(t, m, "gateway_store_errors_total", map[string]string{"op": op})
	}

	_, _, err = s.Chat(t.Context(), req())
	require.NoError(t, err, "served without the store")
	sent := redis.took()
	require.Len(t, sent, 1, "one call was sent to Redis")
	assert.LessOrEqual(t, sent[0], budget, "given the budget")
	assert.Equal(t, []float64{1, 2, 1}, []float64{errorsOf("get"), errorsOf("incr"), errorsOf("put")}, "four calls made without it")

	st, _, err := s.Stream(t.Context(), req())
	require.NoError(t, err)
	var out []chat.Event
	for err == nil {
		out, err = st.Next(out[:0])
	}
	require.ErrorIs(t, err, io.EOF)
	st.Close()
	sent = redis.took()
	require.Len(t, sent, 1, "one call of the stream's was sent to Redis")
	assert.LessOrEqual(t, sent[0], budget, "given the budget")
	assert.Equal(t, []float64{2, 4, 2}, []float64{errorsOf("get"), errorsOf("incr"), errorsOf("put")})
}

// TestStreamEndsItsTurnAtItsEnd: a stream's turn ends as Next returns its end, before the
// transport writes the last events (done, [DONE]) and closes the stream: a client that
// sends its next request as soon as it reads them finds the max_concurrent slot free and
// the finished stream's usage settled in place of its reservation, as after a unary
// answer.
func TestStreamEndsItsTurnAtItsEnd(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	counters := store.NewMemory(clock)
	s := New(textUpstream{"an answer"}, Options{DefaultModel: model, MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 1,
		Quota: quota.New(quota.Options{Keys: map[string]quota.Limits{"ci": {TokensPerDay: 1 << 40}}, Counters: counters, Now: clock}),
	}, zap.NewNop())
	req := func() *chat.Request {
		return &chat.Request{KeyID: "ci", Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
	}
	day := func() int64 {
		v, err := counters.Counts(t.Context(), counterKey("tpd", now))
		require.NoError(t, err)
		return v[0]
	}

	st, _, err := s.Stream(t.Context(), req())
	require.NoError(t, err)
	defer st.Close()
	var out []chat.Event
	for err == nil {
		out, err = st.Next(out[:0])
	}
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, int64(2), day(), "settled: 1 token in, 1 out, not its reservation")
	_, _, err = s.Chat(t.Context(), req())
	require.NoError(t, err, "the only slot is free")
	assert.Equal(t, int64(4), day())
	require.NoError(t, st.Close())
	assert.Equal(t, int64(4), day(), "Close settles nothing more")
}

// TestUnusableAnswersCount: an answer Bedrock gave but the translator cannot use (a
// malformed_model_output stop) still used its tokens: they count against the key's limits,
// though the client gets an error.
func TestUnusableAnswersCount(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	counters := store.NewMemory(clock)
	bad := answer("1", "", "half an answer")
	bad.StopReason = "malformed_model_output"
	s := New(&scripted{answers: []any{bad}}, Options{
		DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 4,
		Quota: quota.New(quota.Options{Keys: map[string]quota.Limits{"ci": {TokensPerDay: 1 << 40}}, Counters: counters, Now: clock}),
	}, zap.NewNop())
	_, _, err := s.Chat(t.Context(), &chat.Request{KeyID: "ci", Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}})
	require.Error(t, err)
	v, err := counters.Counts(t.Context(), counterKey("tpd", now))
	require.NoError(t, err)
	assert.Equal(t, []int64{110}, v, "the answer's 100 in and 10 out")
}
