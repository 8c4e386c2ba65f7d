package core

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// Keys' limits (docs/PROTOCOL.md 14.2). Windows are fixed: the UTC minute and the UTC day,
// each counted in Options.Counters under lim:{<key identity>}:<limit>:<window start>, so
// replicas sharing a store share the count, and a counter ends with its window (the braces
// keep one key's counters on one Redis Cluster slot). A store that fails lets the request
// through uncounted (14.3: limits fail open); the store's wrapper logs and counts that.

// KeyPolicy is what the configuration sets for one key (docs/PROTOCOL.md 14.1): its limits,
// 0 for none, and its defaults, which beat its alias's (see applyDefaults).
type KeyPolicy struct {
	RequestsPerMinute, TokensPerMinute, TokensPerDay int64
	Defaults
}

// Limits, the limit label of gateway_rate_limited_total and the limit field of a refusal.
const (
	LimitRequestsPerMinute = "requests_per_minute"
	LimitTokensPerMinute   = "tokens_per_minute"
	LimitTokensPerDay      = "tokens_per_day"
)

// limits lists the limits the key has.
func (k *KeyPolicy) limits() []string {
	var out []string
	for _, l := range [...]struct {
		name  string
		value int64
	}{{LimitRequestsPerMinute, k.RequestsPerMinute}, {LimitTokensPerMinute, k.TokensPerMinute}, {LimitTokensPerDay, k.TokensPerDay}} {
		if l.value > 0 {
			out = append(out, l.name)
		}
	}
	return out
}

// countsTokens: the key has a token limit, so its answers' tokens are counted.
func (k *KeyPolicy) countsTokens() bool { return k.TokensPerMinute > 0 || k.TokensPerDay > 0 }

// tokenLimit is one of a key's token limits.
type tokenLimit struct {
	w     window
	name  string
	value int64 // 0: none
}

// tokenLimits are the key's token limits, the day's first: when both are spent, the day's
// wait is the one that helps.
func (k *KeyPolicy) tokenLimits() [2]tokenLimit {
	return [2]tokenLimit{{tpdWindow, LimitTokensPerDay, k.TokensPerDay}, {tpmWindow, LimitTokensPerMinute, k.TokensPerMinute}}
}

// LimitError refuses a request whose key is over one of its limits.
type LimitError struct {
	// Key is the key's identity; Limit one of the Limit* names, Value its setting.
	Key, Limit string
	Value      int64
	// RetryAfter is what remains of the limit's window, in whole seconds.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("key %q is over its %s limit (%d); retry in %d s", e.Key, e.Limit, e.Value, int64(e.RetryAfter/time.Second))
}

// window is a fixed window of a limit: the UTC minute or the UTC day.
type window struct {
	tag  string // the limit's part of the counter's key
	size time.Duration
}

var (
	rpmWindow = window{"rpm", time.Minute}
	tpmWindow = window{"tpm", time.Minute}
	tpdWindow = window{"tpd", 24 * time.Hour}
)

// counterTTLMargin keeps a counter a little past its window's end, so that a replica whose
// clock is a little behind still finds it.
const counterTTLMargin = 5 * time.Second

// at is the counter key of id's window holding now, and what remains of that window. Unix
// time counts every day as 86,400 s, so its day boundaries are UTC midnights.
func (w window) at(id string, now time.Time) (key string, left time.Duration) {
	size := int64(w.size / time.Second)
	n := now.Unix() / size
	end := time.Unix((n+1)*size, 0)
	return "lim:{" + id + "}:" + w.tag + ":" + strconv.FormatInt(n*size, 10), end.Sub(now)
}

// waitFor is left in whole seconds, rounded up, at least 1: a Retry-After.
func waitFor(left time.Duration) time.Duration {
	return max(time.Second, (left + time.Second - 1).Truncate(time.Second))
}

// checkKey admits a request of key id or refuses it with a *LimitError, before it costs a
// Bedrock call: while a token limit of the current window is used up (an answer may have
// overshot it), or when the request is one more than requests_per_minute. Only admitted
// requests stay counted: a refused one takes its count back (under contention at the
// limit, a request may be refused while another's is being taken back). A store error lets
// it through.
func (s *Service) checkKey(ctx context.Context, id string, k *KeyPolicy) error {
	now := s.now()
	if k.countsTokens() {
		var set [2]tokenLimit
		keys := make([]string, 0, len(set))
		for _, l := range k.tokenLimits() {
			if l.value > 0 {
				key, _ := l.w.at(id, now)
				set[len(keys)], keys = l, append(keys, key)
			}
		}
		if used, err := s.opts.Counters.Counts(ctx, keys...); err == nil && len(used) == len(keys) {
			for i, l := range set[:len(keys)] {
				if used[i] >= l.value {
					return s.refuseKey(id, l.name, l.value, l.w, now)
				}
			}
		}
	}
	if k.RequestsPerMinute > 0 {
		key, left := rpmWindow.at(id, now)
		if n, err := s.opts.Counters.Incr(ctx, key, 1, left+counterTTLMargin); err == nil && n > k.RequestsPerMinute {
			_, _ = s.opts.Counters.Incr(ctx, key, -1, left+counterTTLMargin)
			return s.refuseKey(id, LimitRequestsPerMinute, k.RequestsPerMinute, rpmWindow, now)
		}
	}
	return nil
}

// refuseKey counts a refusal and returns its error.
func (s *Service) refuseKey(id, limit string, value int64, w window, now time.Time) error {
	s.opts.Metrics.RateLimited(id, limit)
	_, left := w.at(id, now)
	return &LimitError{Key: id, Limit: limit, Value: value, RetryAfter: waitFor(left)}
}

// estimatedUsage is what a stream that ended before Bedrock's usage (the client left, or it
// failed mid-way) counts against its key's token limits, so that leaving a stream early
// does not spend tokens uncounted: its messages' bytes and the bytes of the answer it
// passed on, at 4 bytes a token.
func estimatedUsage(req *chat.Request, written int) chat.Usage {
	in := 0
	for i := range req.Messages {
		in += messageBytes(&req.Messages[i])
	}
	return chat.Usage{PromptTokens: int32(min(in/4, math.MaxInt32)), CompletionTokens: int32(min(written/4, math.MaxInt32))}
}

// countTokens adds what one answer, or one repair attempt, used to the token limits of the
// request's key: its input, output and cache-write tokens, and its cache-read tokens
// weighted by cache_read_weight. The count is kept even when the client has gone: the
// tokens were spent.
func (s *Service) countTokens(ctx context.Context, p *prepared, u chat.Usage) {
	if p.key == nil || !p.key.countsTokens() {
		return
	}
	// PromptTokens holds the cache reads and writes (translate.Usage).
	n := int64(u.PromptTokens) - int64(u.CacheReadTokens) + int64(u.CompletionTokens) +
		int64(math.Round(s.opts.CacheReadWeight*float64(u.CacheReadTokens)))
	if n <= 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	now := s.now()
	for _, l := range p.key.tokenLimits() {
		if l.value > 0 {
			key, left := l.w.at(p.keyID, now)
			_, _ = s.opts.Counters.Incr(ctx, key, n, left+counterTTLMargin) // fails open
		}
	}
}
