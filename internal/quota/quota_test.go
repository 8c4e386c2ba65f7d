package quota

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/store"
)

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

// TestMonthWindow: a month is the UTC calendar's, from its first day's midnight to the
// next month's, whatever its length and the zone of the time given.
func TestMonthWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		now, start, end time.Time
	}{
		{time.Date(2026, 3, 31, 23, 59, 30, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		// 2026-04-01 03:00 in UTC+5 is still March in UTC.
		{time.Date(2026, 4, 1, 3, 0, 0, 0, time.FixedZone("UTC+5", 5*3600)), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)},
	} {
		key, left := usdMonthWindow.at("ci", c.now)
		assert.Equal(t, "lim:{ci}:usdm:"+itoa(c.start.Unix()), key, "%v", c.now)
		assert.Equal(t, c.end.Sub(c.now), left, "%v", c.now)
	}
	key, left := usdDayWindow.at("ci", time.Date(2026, 3, 31, 23, 59, 30, 0, time.UTC))
	assert.Equal(t, "lim:{ci}:usdd:"+itoa(time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC).Unix()), key)
	assert.Equal(t, 30*time.Second, left)
}

// failingCounters is store.Counters whose calls fail while failing is set.
type failingCounters struct {
	store.Counters
	failing bool
}

func (c *failingCounters) Add(ctx context.Context, deltas ...store.Delta) ([]int64, bool, error) {
	if c.failing {
		return nil, false, errors.New("store down")
	}
	return c.Counters.Add(ctx, deltas...)
}

// TestDollarBudgets: a key's spend is counted in micro-dollars in the UTC day's and the
// UTC month's windows as its requests settle, each at the price of the model that
// answered; a request arriving when a window has reached its limit is refused, naming the
// limit in dollars, until the window ends (the day at UTC midnight, the month at the first
// of the next); the request that reaches a limit is served whole. A request cut short
// counts at least its input estimate and what it passed on, at its model's price. A store
// that fails lets requests through and counts nothing.
func TestDollarBudgets(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 3, 30, 22, 0, 0, 0, time.UTC))
	counters := &failingCounters{Counters: store.NewMemory(clock.Now)}
	k := New(Options{Keys: map[string]Limits{"ci": {MicroUSDPerDay: 1000, MicroUSDPerMonth: 2500}}, Counters: counters, Now: clock.Now})
	sonnet := pricing.Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}
	// 100 input, 20 output, 200 cache reads, 100 cache writes: 300 + 300 + 60 + 375.
	call := chat.Usage{PromptTokens: 400, CompletionTokens: 20, CacheReadTokens: 200, CacheWriteTokens: 100}
	const callMicros = 1035
	spent := func() (day, month int64) {
		t.Helper()
		d, _ := usdDayWindow.at("ci", clock.Now())
		m, _ := usdMonthWindow.at("ci", clock.Now())
		v, err := counters.Counts(t.Context(), d, m)
		require.NoError(t, err)
		return v[0], v[1]
	}
	refused := func(limit string, value int64, retry time.Duration, message string) {
		t.Helper()
		_, err := k.Admit(t.Context(), "ci", 10, 10)
		var limited *LimitError
		require.ErrorAs(t, err, &limited)
		assert.Equal(t, LimitError{Key: "ci", Limit: limit, Value: value, RetryAfter: retry}, *limited)
		assert.Equal(t, message, err.Error())
		assert.Equal(t, fault.Failure{Kind: fault.KindRateLimited, Message: message, RetryAfter: retry, Limit: limit}, limited.Failure())
	}

	a, err := k.Admit(t.Context(), "ci", 10, 10)
	require.NoError(t, err)
	require.True(t, a.Metered(), "a dollar limit meters the request")
	day, month := spent()
	assert.Equal(t, [2]int64{0, 0}, [2]int64{day, month}, "admission reserves no dollars")
	a.Count(call, sonnet)
	a.Settle(t.Context())
	day, month = spent()
	assert.Equal(t, [2]int64{callMicros, callMicros}, [2]int64{day, month}, "the cost goes to the day and the month")

	// 1,035 micro-dollars reached the day's 1,000: refused until midnight, two hours on.
	refused(USDPerDay, 1000, 2*time.Hour, `key "ci" is over its usd_per_day limit (0.001 USD); retry in 7200 s`)

	clock.Advance(2 * time.Hour) // 2026-03-31 00:00: a new day, the same month
	a, err = k.Admit(t.Context(), "ci", 10, 10)
	require.NoError(t, err, "a new day")
	b, err := k.Admit(t.Context(), "ci", 10, 10)
	require.NoError(t, err, "calls in flight do not count until they settle")
	a.Count(call, sonnet)
	a.Settle(t.Context())
	b.Count(call, pricing.Price{}) // a model without a price costs nothing
	b.Settle(t.Context())
	day, month = spent()
	assert.Equal(t, [2]int64{callMicros, 2 * callMicros}, [2]int64{day, month})
	refused(USDPerDay, 1000, 24*time.Hour, `key "ci" is over its usd_per_day limit (0.001 USD); retry in 86400 s`)

	// The month's 2,500 is not reached yet; the day is, so the day refuses. A third call
	// settled by hand takes the month over.
	c := &Admission{k: k, id: "ci", key: k.keys["ci"]}
	c.Count(call, sonnet)
	c.Settle(t.Context())
	_, month = spent()
	require.Equal(t, int64(3*callMicros), month)
	clock.Set(time.Date(2026, 3, 31, 23, 59, 30, 0, time.UTC))
	refused(USDPerMonth, 2500, 30*time.Second, `key "ci" is over its usd_per_month limit (0.0025 USD); retry in 30 s`)

	clock.Advance(30 * time.Second) // 2026-04-01 00:00: a new month, and a new day
	a, err = k.Admit(t.Context(), "ci", 1000, 4096)
	require.NoError(t, err, "a new month")
	a.CutShort(400, sonnet) // the client left after 400 bytes: 1000 in and 100 out by estimate
	a.Settle(t.Context())
	day, month = spent()
	assert.Equal(t, [2]int64{1000*3 + 100*15, 1000*3 + 100*15}, [2]int64{day, month})

	clock.Advance(24 * time.Hour)
	counters.failing = true
	a, err = k.Admit(t.Context(), "ci", 10, 10)
	require.NoError(t, err, "a store that fails lets the request through")
	a.Count(call, sonnet)
	a.Settle(t.Context())
	counters.failing = false
	day, _ = spent()
	assert.Zero(t, day, "and counts nothing")
}

// TestDollarsBeforeTokens: when several limits are spent, the refusal names the one with
// the longest wait: the month's dollars, then the day's, then the day's tokens.
func TestDollarsBeforeTokens(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	k := New(Options{Keys: map[string]Limits{"ci": {RequestsPerMinute: 1, TokensPerDay: 1, MicroUSDPerDay: 1, MicroUSDPerMonth: 1}},
		Counters: store.NewMemory(clock.Now), Now: clock.Now})
	a, err := k.Admit(t.Context(), "ci", 10, 10)
	require.NoError(t, err)
	a.Count(chat.Usage{PromptTokens: 10}, pricing.Price{Input: 1})
	a.Settle(t.Context())
	_, err = k.Admit(t.Context(), "ci", 10, 10)
	var limited *LimitError
	require.ErrorAs(t, err, &limited)
	assert.Equal(t, USDPerMonth, limited.Limit)
	assert.Equal(t, 22*24*time.Hour-12*time.Hour, limited.RetryAfter, "to April 1")
}
