package core

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
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

func (c *recordingCounters) Incr(ctx context.Context, key string, n int64, ttl time.Duration) (int64, error) {
	c.mu.Lock()
	c.calls = append(c.calls, "incr "+key)
	failing := c.failing
	c.mu.Unlock()
	if failing {
		return 0, errors.New("store down")
	}
	return c.Counters.Incr(ctx, key, n, ttl)
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

// TestWindows: counters are named by key identity, limit and the window's start; what is
// left of a window is a Retry-After in whole seconds, rounded up, at least 1.
func TestWindows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 37, 200_000_000, time.UTC) // 10:20:37.2 UTC
	key, left := rpmWindow.at("ci", now)
	assert.Equal(t, "lim:{ci}:rpm:"+itoa(time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC).Unix()), key)
	assert.Equal(t, 22800*time.Millisecond, left)
	assert.Equal(t, 23*time.Second, waitFor(left))
	key, left = tpdWindow.at("ci", now.In(time.FixedZone("UTC+5", 5*3600))) // the zone does not move the day
	assert.Equal(t, "lim:{ci}:tpd:"+itoa(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Unix()), key)
	assert.Equal(t, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Sub(now), left)
	_, left = tpmWindow.at("ci", time.Date(2026, 3, 1, 10, 20, 59, 999_000_000, time.UTC))
	assert.Equal(t, time.Second, waitFor(left), "a millisecond left is a second")
	_, left = tpmWindow.at("ci", time.Date(2026, 3, 1, 10, 21, 0, 0, time.UTC))
	assert.Equal(t, time.Minute, waitFor(left), "at the edge, a whole new window")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestKeyLimits: the order of the checks and what each costs in store calls: none for a
// request without a key, or whose key has only defaults; counts before the request for
// token limits, one increment for requests_per_minute; a store that fails lets requests
// through.
func TestKeyLimits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 20, 37, 0, time.UTC)
	clock := func() time.Time { return now }
	counters := &recordingCounters{Counters: store.NewMemory(clock)}
	s := New(nil, Options{
		DefaultModel: "us.anthropic.claude-sonnet-4-20250514-v1:0", MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		Keys: map[string]KeyPolicy{
			"ci":       {RequestsPerMinute: 2, TokensPerMinute: 100, TokensPerDay: 1000},
			"defaults": {Defaults: Defaults{ToolValidation: "repair"}},
		},
		Counters: counters, Now: clock, CacheReadWeight: 0.1,
	}, zap.NewNop())
	minute, day := itoa(now.Truncate(time.Minute).Unix()), itoa(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Unix())
	prepare := func(keyID string) (*prepared, error) {
		var res Result
		return s.prepare(t.Context(), &chat.Request{KeyID: keyID, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, &res)
	}

	for _, id := range []string{"", "defaults", "unknown"} {
		_, err := prepare(id)
		require.NoError(t, err)
		assert.Empty(t, counters.took(), "key %q has no limit: no store call", id)
	}

	p, err := prepare("ci")
	require.NoError(t, err)
	assert.Equal(t, []string{"count lim:{ci}:tpd:" + day, "count lim:{ci}:tpm:" + minute, "incr lim:{ci}:rpm:" + minute}, counters.took())

	// 60 input, 20 output, 10 cache writes, 50 cache reads weighted 0.1: 95.
	s.countTokens(t.Context(), p, chat.Usage{PromptTokens: 120, CompletionTokens: 20, CacheReadTokens: 50, CacheWriteTokens: 10})
	assert.Equal(t, []string{"incr lim:{ci}:tpd:" + day, "incr lim:{ci}:tpm:" + minute}, counters.took())
	used, _ := counters.Counts(t.Context(), "lim:{ci}:tpm:"+minute, "lim:{ci}:tpd:"+day)
	assert.Equal(t, []int64{95, 95}, used)
	counters.took()

	_, err = prepare("ci") // 95 < 100 tokens: admitted, the second request of the minute
	require.NoError(t, err)
	counters.took()
	_, err = prepare("ci") // the third
	var limited *LimitError
	require.ErrorAs(t, err, &limited)
	assert.Equal(t, LimitError{Key: "ci", Limit: LimitRequestsPerMinute, Value: 2, RetryAfter: 23 * time.Second}, *limited)
	assert.Equal(t, `key "ci" is over its requests_per_minute limit (2); retry in 23 s`, err.Error())
	f := Classify(t.Context(), err)
	assert.Equal(t, Failure{Kind: KindRateLimited, Message: err.Error(), RetryAfter: 23 * time.Second, Limit: LimitRequestsPerMinute}, f)
	counters.took()

	s.countTokens(t.Context(), p, chat.Usage{PromptTokens: 5})
	counters.took()
	_, err = prepare("ci") // 100 tokens used: refused before the requests are counted
	require.ErrorAs(t, err, &limited)
	assert.Equal(t, LimitTokensPerMinute, limited.Limit)
	assert.Equal(t, []string{"count lim:{ci}:tpd:" + day, "count lim:{ci}:tpm:" + minute}, counters.took())

	counters.mu.Lock()
	counters.failing = true
	counters.mu.Unlock()
	_, err = prepare("ci")
	assert.NoError(t, err, "a store that fails lets the request through")
	s.countTokens(t.Context(), p, chat.Usage{PromptTokens: 5}) // and drops the count, without panicking
}
