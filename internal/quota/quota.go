// Package quota holds API keys to their limits (docs/PROTOCOL.md 14.2, 17.2): requests per
// minute, tokens per minute and tokens per day, and dollars per day and per month.
//
// Windows are fixed: the UTC minute, the UTC day and the UTC calendar month, each counted
// in a store.Counters under lim:{<key identity>}:<limit>:<window start>, so replicas
// sharing a store share the count, and a counter ends with its window (the braces keep one
// key's counters on one Redis Cluster slot). A request reserves its estimated tokens as it
// is admitted and settles to what it used at its end (Admission); its cost, in
// micro-dollars, is added as it settles. A store that fails lets the request through
// uncounted (14.3: limits fail open); the store's wrapper logs and counts that.
package quota

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Limits are one key's limits (docs/PROTOCOL.md 14.1, 17.2); 0 is none.
type Limits struct {
	RequestsPerMinute, TokensPerMinute, TokensPerDay int64
	// MicroUSDPerDay and MicroUSDPerMonth are usd_per_day and usd_per_month in
	// micro-dollars.
	MicroUSDPerDay, MicroUSDPerMonth int64
}

// CountsTokens reports whether the key has a token limit, so its answers' tokens are
// counted.
func (l *Limits) CountsTokens() bool { return l.TokensPerMinute > 0 || l.TokensPerDay > 0 }

// CountsUSD reports whether the key has a dollar limit, so its calls' cost is counted.
func (l *Limits) CountsUSD() bool { return l.MicroUSDPerDay > 0 || l.MicroUSDPerMonth > 0 }

// The limits' names: the limit label of gateway_rate_limited_total and the limit field of
// a refusal.
const (
	RequestsPerMinute = "requests_per_minute"
	TokensPerMinute   = "tokens_per_minute"
	TokensPerDay      = "tokens_per_day"
	USDPerDay         = "usd_per_day"
	USDPerMonth       = "usd_per_month"
)

// limit is one of a key's limits.
type limit struct {
	w     window
	name  string
	value int64
}

// list is the limits the key has, the longest windows first: when several are spent, the
// longest wait is the one that helps.
func (l *Limits) list() []limit {
	var out []limit
	for _, lim := range [...]limit{{usdMonthWindow, USDPerMonth, l.MicroUSDPerMonth}, {usdDayWindow, USDPerDay, l.MicroUSDPerDay},
		{tpdWindow, TokensPerDay, l.TokensPerDay}, {tpmWindow, TokensPerMinute, l.TokensPerMinute},
		{rpmWindow, RequestsPerMinute, l.RequestsPerMinute}} {
		if lim.value > 0 {
			out = append(out, lim)
		}
	}
	return out
}

// LimitError refuses a request whose key is over one of its limits.
type LimitError struct {
	// Key is the key's identity; Limit one of the limits' names, Value its setting (in
	// micro-dollars for usd_per_day and usd_per_month).
	Key, Limit string
	Value      int64
	// RetryAfter is what remains of the limit's window, in whole seconds.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	value := strconv.FormatInt(e.Value, 10)
	if e.Limit == USDPerDay || e.Limit == USDPerMonth {
		value = strconv.FormatFloat(float64(e.Value)/1e6, 'f', -1, 64) + " USD"
	}
	return fmt.Sprintf("key %q is over its %s limit (%s); retry in %d s", e.Key, e.Limit, value, int64(e.RetryAfter/time.Second))
}

// Failure implements [fault.Classified]: the key is rate limited until its window ends.
func (e *LimitError) Failure() fault.Failure {
	return fault.Failure{Kind: fault.KindRateLimited, Message: e.Error(), RetryAfter: e.RetryAfter, Limit: e.Limit}
}

// window is a fixed window of a limit: the UTC minute, the UTC day or the UTC calendar
// month, and what its counter counts.
type window struct {
	tag  string        // the limit's part of the counter's key
	size time.Duration // 0: the calendar month
	unit unit
}

// unit is what a window's counter counts.
type unit uint8

const (
	unitRequests unit = iota
	unitTokens
	unitMicroUSD
)

var (
	rpmWindow      = window{"rpm", time.Minute, unitRequests}
	tpmWindow      = window{"tpm", time.Minute, unitTokens}
	tpdWindow      = window{"tpd", 24 * time.Hour, unitTokens}
	usdDayWindow   = window{"usdd", 24 * time.Hour, unitMicroUSD}
	usdMonthWindow = window{"usdm", 0, unitMicroUSD}
)

// counterTTLMargin keeps a counter a little past its window's end, so that a replica whose
// clock is a little behind still finds it.
const counterTTLMargin = 5 * time.Second

// at is the counter key of id's window holding now, and what remains of that window. Unix
// time counts every day as 86,400 s, so its day boundaries are UTC midnights; a month is
// the calendar's, from its first day's UTC midnight to the next month's.
func (w window) at(id string, now time.Time) (key string, left time.Duration) {
	var start, end time.Time
	if w.size == 0 {
		y, m, _ := now.UTC().Date()
		start = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		end = start.AddDate(0, 1, 0)
	} else {
		size := int64(w.size / time.Second)
		n := now.Unix() / size
		start, end = time.Unix(n*size, 0), time.Unix((n+1)*size, 0)
	}
	return "lim:{" + id + "}:" + w.tag + ":" + strconv.FormatInt(start.Unix(), 10), end.Sub(now)
}

// waitFor is left in whole seconds, rounded up, at least 1: a Retry-After.
func waitFor(left time.Duration) time.Duration {
	return max(time.Second, (left + time.Second - 1).Truncate(time.Second))
}

// Options configures a Keeper.
type Options struct {
	// Keys holds the limits of the keys that have some, by the identity the keyring gives
	// their calls (chat.Request.KeyID).
	Keys map[string]Limits
	// Counters counts the keys' use; nil counts in this process.
	Counters store.Counters
	// CacheReadWeight is what a prompt-cache read token counts against a token limit.
	CacheReadWeight float64
	// Now is the clock of the windows; nil is time.Now.
	Now     func() time.Time
	Metrics *metrics.Metrics
}

// Keeper admits requests against their keys' limits. Safe for concurrent use.
type Keeper struct {
	keys     map[string]*Limits
	counters store.Counters
	weight   float64
	now      func() time.Time
	metrics  *metrics.Metrics
}

// New returns the Keeper of opts.Keys.
func New(opts Options) *Keeper {
	k := &Keeper{counters: opts.Counters, weight: opts.CacheReadWeight, now: opts.Now, metrics: opts.Metrics}
	if k.now == nil {
		k.now = time.Now
	}
	if k.counters == nil {
		k.counters = store.NewMemory(k.now)
	}
	for _, id := range slices.Sorted(maps.Keys(opts.Keys)) {
		l := opts.Keys[id]
		if len(l.list()) == 0 {
			continue
		}
		if k.keys == nil {
			k.keys = make(map[string]*Limits, len(opts.Keys))
		}
		k.keys[id] = &l
		for _, lim := range l.list() {
			opts.Metrics.KeyLimit(id, lim.name) // a series from the start
		}
	}
	return k
}

// Limited reports whether key id has limits, so its requests need an estimate to be
// admitted; a key without is admitted without one and without a store call.
func (k *Keeper) Limited(id string) bool { return k != nil && k.keys[id] != nil }

// Admission is one admitted request's standing against its key's limits. Admit reserves
// the request's estimated tokens in the token windows of that moment, its input from the
// whole request and its output from its maxTokens, in the same atomic store call that
// counts the request for requests_per_minute and checks its key's spend, which adds
// nothing when a window is already at its limit; so requests arriving together overshoot
// a token limit by at most one reservation. Each repair attempt reserves again before it
// is made (RepairAllowed). The calls the request makes (failover, repair attempts) add up
// their real usage and cost (Count), and the request settles once, at its end (Settle),
// replacing its reservations by what it used and adding its cost to the dollar windows; a
// request cut short (the client left, a timeout, a stream that ended before Bedrock's
// usage) settles at least its input estimate and the output it passed on, and their
// cost, since Bedrock processed them. A nil Admission, a key without limits, does nothing.
// Not safe for concurrent use: it belongs to the request.
type Admission struct {
	k   *Keeper
	id  string
	key *Limits
	// input and output are the request's estimates; reservations what it added to the
	// token windows (none when the store failed: limits fail open).
	input, output int64
	reservations  []reservation
	// used is the weighted usage of the calls that answered, cost what they cost in
	// dollars; cut: a call ended without its usage, and out is what the answer passed on,
	// in tokens by estimate, cutPrice the price of the model of that call.
	used, out int64
	cost      float64
	cut       bool
	cutPrice  pricing.Price
	settled   bool
}

// reservation is tokens added to the token windows current at a moment.
type reservation struct {
	at     time.Time
	tokens int64
}

// Admit admits a request of key id, estimated to take input tokens and give at most output,
// against the key's limits, or refuses it with a *LimitError before it costs a Bedrock
// call. It returns nil for a key without limits, and a nil Keeper has none. A store that
// fails admits the request (14.3: limits fail open).
func (k *Keeper) Admit(ctx context.Context, id string, input, output int64) (*Admission, error) {
	if !k.Limited(id) {
		return nil, nil
	}
	key := k.keys[id]
	a := &Admission{k: k, id: id, key: key}
	if key.CountsTokens() || key.CountsUSD() {
		a.input, a.output = input, output
	}
	if l := a.add(ctx, key.list(), a.input+a.output); l != nil {
		k.metrics.RateLimited(id, l.name)
		_, left := l.w.at(id, k.now())
		return nil, &LimitError{Key: id, Limit: l.name, Value: l.value, RetryAfter: waitFor(left)}
	}
	return a, nil
}

// add adds tokens to the token windows of limits, 1 to requests_per_minute and nothing to
// the dollar windows (they are checked, not reserved: a call's cost is known once it is
// made), unless a window is already at its limit: then it adds nothing and returns that
// limit. A store that fails adds nothing and refuses nothing.
func (a *Admission) add(ctx context.Context, limits []limit, tokens int64) *limit {
	now := a.k.now()
	deltas := make([]store.Delta, len(limits))
	for i, l := range limits {
		key, left := l.w.at(a.id, now)
		deltas[i] = store.Delta{Key: key, TTL: left + counterTTLMargin, Limit: l.value}
		switch l.w.unit {
		case unitRequests:
			deltas[i].N = 1
		case unitTokens:
			deltas[i].N = tokens
		}
	}
	counts, ok, err := a.k.counters.Add(ctx, deltas...)
	switch {
	case err != nil:
		return nil // fails open: nothing was counted
	case !ok:
		if i := store.Refused(deltas, counts); i >= 0 {
			return &limits[i]
		}
		return nil
	}
	if a.key.CountsTokens() {
		a.reservations = append(a.reservations, reservation{at: now, tokens: tokens})
	}
	return nil
}

// Metered reports whether the request's usage is counted: its key has a token or a dollar
// limit. A stream then counts what it passes on, for an end before Bedrock's usage
// (CutShort).
func (a *Admission) Metered() bool { return a != nil && (a.key.CountsTokens() || a.key.CountsUSD()) }

// Input is the request's input estimate in tokens; 0 when its usage is not counted.
func (a *Admission) Input() int64 {
	if a == nil {
		return 0
	}
	return a.input
}

// RepairAllowed reserves a repair attempt's tokens, the request's input with the turn it
// answers and its own output, and reports whether the key's token windows had room for
// them; a key without token limits always has. A repair attempt is a whole model call, so
// it is admitted as one: without this, max_repair_attempts would multiply what one
// admission let through. The dollar windows are not checked again: a request admitted
// finishes, as any call in flight does when its key's budget is reached.
func (a *Admission) RepairAllowed(ctx context.Context) bool {
	if a == nil || !a.key.CountsTokens() {
		return true
	}
	var tokenLimits []limit
	for _, l := range a.key.list() {
		if l.w.unit == unitTokens {
			tokenLimits = append(tokenLimits, l)
		}
	}
	return a.add(ctx, tokenLimits, a.input+2*a.output) == nil
}

// Count adds what one answer, or one repair attempt, used: its input, output and
// cache-write tokens, and its cache-read tokens weighted by cache_read_weight; and what
// it cost at p, the price of the model that answered it.
func (a *Admission) Count(u chat.Usage, p pricing.Price) {
	if a == nil {
		return
	}
	// PromptTokens holds the cache reads and writes (translate.Usage).
	n := int64(u.PromptTokens) - int64(u.CacheReadTokens) + int64(u.CompletionTokens) +
		int64(math.Round(a.k.weight*float64(u.CacheReadTokens)))
	a.used += max(n, 0)
	a.cost += p.Cost(u)
}

// CutShort notes that a call, on a model of price p, ended without Bedrock's usage after
// it reached Bedrock (the client left, a timeout, a stream cut mid-way), having passed on
// written bytes of the answer: the request settles at least its input estimate and those
// bytes' tokens, and what they cost at p.
func (a *Admission) CutShort(written int, p pricing.Price) {
	if a == nil {
		return
	}
	a.cut, a.cutPrice = true, p
	a.out = max(a.out, int64(written/4))
}

// Settle replaces the request's reservations by what it used, and adds what it cost to
// the dollar windows, once, in one store call. Reservations made in a window that has
// ended since stay in it; what the request used beyond them goes to the current window,
// in place of the reservations made in it; its cost goes to the current day and month.
// The count is kept even when the client has gone: the tokens were spent. A store that
// fails here, or a request whose redis_timeout its other calls spent, leaves the
// reservations counted in place of the usage, and the cost uncounted: token limits err on
// the strict side, dollar limits fail open.
func (a *Admission) Settle(ctx context.Context) {
	if !a.Metered() || a.settled {
		return
	}
	a.settled = true
	used, cost := a.used, a.cost
	if a.cut {
		used = max(used, a.input+a.out)
		estimate := chat.Usage{PromptTokens: clampInt32(a.input), CompletionTokens: clampInt32(a.out)}
		cost = max(cost, a.cutPrice.Cost(estimate))
	}
	micros := pricing.Micros(cost)
	now := a.k.now()
	var deltas []store.Delta
	for _, l := range a.key.list() {
		key, left := l.w.at(a.id, now)
		switch l.w.unit {
		case unitMicroUSD:
			if micros > 0 {
				deltas = append(deltas, store.Delta{Key: key, N: micros, TTL: left + counterTTLMargin})
			}
		case unitTokens:
			var ended, current int64
			for _, r := range a.reservations {
				if then, _ := l.w.at(a.id, r.at); then == key {
					current += r.tokens
				} else {
					ended += r.tokens
				}
			}
			if n := max(used-ended, 0) - current; n != 0 {
				deltas = append(deltas, store.Delta{Key: key, N: n, TTL: left + counterTTLMargin})
			}
		}
	}
	if len(deltas) > 0 {
		_, _, _ = a.k.counters.Add(context.WithoutCancel(ctx), deltas...)
	}
}

// clampInt32 is n, at most math.MaxInt32.
func clampInt32(n int64) int32 { return int32(min(n, math.MaxInt32)) }
