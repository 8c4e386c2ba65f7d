package core

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Keys' limits (docs/PROTOCOL.md 14.2). Windows are fixed: the UTC minute and the UTC day,
// each counted in Options.Counters under lim:{<key identity>}:<limit>:<window start>, so
// replicas sharing a store share the count, and a counter ends with its window (the braces
// keep one key's counters on one Redis Cluster slot). A request reserves its estimated
// tokens as it is admitted and settles to what it used at its end (quota). A store that
// fails lets the request through uncounted (14.3: limits fail open); the store's wrapper
// logs and counts that.

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

// limit is one of a key's limits.
type limit struct {
	w     window
	name  string
	value int64
}

// tokens: the limit counts tokens, not requests.
func (l limit) tokens() bool { return l.w != rpmWindow }

// limits are the limits the key has, the day's tokens first: when several are spent, the
// longest wait is the one that helps.
func (k *KeyPolicy) limits() []limit {
	var out []limit
	for _, l := range [...]limit{{tpdWindow, LimitTokensPerDay, k.TokensPerDay},
		{tpmWindow, LimitTokensPerMinute, k.TokensPerMinute}, {rpmWindow, LimitRequestsPerMinute, k.RequestsPerMinute}} {
		if l.value > 0 {
			out = append(out, l)
		}
	}
	return out
}

// countsTokens: the key has a token limit, so its answers' tokens are counted.
func (k *KeyPolicy) countsTokens() bool { return k.TokensPerMinute > 0 || k.TokensPerDay > 0 }

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

// Failure implements [fault.Classified]: the key is rate limited until its window ends.
func (e *LimitError) Failure() fault.Failure {
	return fault.Failure{Kind: fault.KindRateLimited, Message: e.Error(), RetryAfter: e.RetryAfter, Limit: e.Limit}
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

// What admission reserves for the output of a request whose translation sends no
// maxTokens (default_max_tokens 0) on a model whose maximum output the gateway does not know.
const unknownOutputReservation = 4096

// Tokens an image is estimated at: the most Claude counts for one (about 1.15 megapixels,
// width × height / 750); the bytes of a base64 image say nothing of its tokens.
const imageTokens = 1600

// quota is one admitted request's standing against its key's limits (docs/PROTOCOL.md
// 14.2). Admission reserves the request's estimated tokens in the token windows of that
// moment, its input from the whole request and its output from its maxTokens, in the same
// atomic store call that counts the request for requests_per_minute, which adds nothing
// when a window is already at its limit; so requests arriving together overshoot a limit
// by at most one reservation. Each repair attempt reserves again before it is made. The
// calls the request makes (failover, repair attempts) add up their real usage, and the
// request settles once, at its end, replacing its reservations by what it used; a request
// cut short (the client left, a timeout, a stream that ended before Bedrock's usage)
// settles at least its input estimate and the output it passed on, since Bedrock
// processed it. Not safe for concurrent use: it belongs to the request.
type quota struct {
	svc *Service
	id  string
	key *KeyPolicy
	// input and output are the request's estimates; reservations what it added to the
	// token windows (none when the store failed: limits fail open).
	input, output int64
	reservations  []reservation
	// used is the weighted usage of the calls that answered; cut: a call ended without its
	// usage, and out is what the answer passed on, in tokens by estimate.
	used, out int64
	cut       bool
	settled   bool
}

// reservation is tokens added to the token windows current at a moment.
type reservation struct {
	at     time.Time
	tokens int64
}

// reserve admits p's request against its key's limits, or refuses it with a *LimitError
// before it costs a Bedrock call. It returns nil for a key without limits. A store that
// fails admits the request (14.3: limits fail open).
func (s *Service) reserve(ctx context.Context, p *prepared) (*quota, error) {
	if p.key == nil {
		return nil, nil
	}
	limits := p.key.limits()
	if len(limits) == 0 {
		return nil, nil
	}
	q := &quota{svc: s, id: p.keyID, key: p.key}
	if p.key.countsTokens() {
		q.input, q.output = inputEstimate(p.req), outputEstimate(p)
	}
	if l := q.add(ctx, limits, q.input+q.output); l != nil {
		return nil, s.refuseKey(q.id, *l, s.now())
	}
	return q, nil
}

// add adds tokens to the token windows of limits, and 1 to requests_per_minute when it is
// among them, unless a window is already at its limit: then it adds nothing and returns
// that limit. A store that fails adds nothing and refuses nothing.
func (q *quota) add(ctx context.Context, limits []limit, tokens int64) *limit {
	now := q.svc.now()
	deltas := make([]store.Delta, len(limits))
	for i, l := range limits {
		key, left := l.w.at(q.id, now)
		deltas[i] = store.Delta{Key: key, N: 1, TTL: left + counterTTLMargin, Limit: l.value}
		if l.tokens() {
			deltas[i].N = tokens
		}
	}
	counts, ok, err := q.svc.opts.Counters.Add(ctx, deltas...)
	switch {
	case err != nil:
		return nil // fails open: nothing was counted
	case !ok:
		if i := store.Refused(deltas, counts); i >= 0 {
			return &limits[i]
		}
		return nil
	}
	if q.key.countsTokens() {
		q.reservations = append(q.reservations, reservation{at: now, tokens: tokens})
	}
	return nil
}

// repairAllowed reserves a repair attempt's tokens, the request's input with the turn it
// answers and its own output, and reports whether the key's token windows had room for
// them; a key without token limits always has. A repair attempt is a whole model call, so
// it is admitted as one: without this, max_repair_attempts would multiply what one
// admission let through.
func (q *quota) repairAllowed(ctx context.Context) bool {
	if q == nil || !q.key.countsTokens() {
		return true
	}
	var tokenLimits []limit
	for _, l := range q.key.limits() {
		if l.tokens() {
			tokenLimits = append(tokenLimits, l)
		}
	}
	return q.add(ctx, tokenLimits, q.input+2*q.output) == nil
}

// refuseKey counts a refusal by limit l and returns its error.
func (s *Service) refuseKey(id string, l limit, now time.Time) error {
	s.opts.Metrics.RateLimited(id, l.name)
	_, left := l.w.at(id, now)
	return &LimitError{Key: id, Limit: l.name, Value: l.value, RetryAfter: waitFor(left)}
}

// count adds what one answer, or one repair attempt, used: its input, output and
// cache-write tokens, and its cache-read tokens weighted by cache_read_weight. A nil quota
// counts nothing.
func (q *quota) count(u chat.Usage) {
	if q == nil {
		return
	}
	// PromptTokens holds the cache reads and writes (translate.Usage).
	n := int64(u.PromptTokens) - int64(u.CacheReadTokens) + int64(u.CompletionTokens) +
		int64(math.Round(q.svc.opts.CacheReadWeight*float64(u.CacheReadTokens)))
	q.used += max(n, 0)
}

// cutShort notes that a call ended without Bedrock's usage after it reached Bedrock (the
// client left, a timeout, a stream cut mid-way), having passed on written bytes of the
// answer: the request settles at least its input estimate and those bytes' tokens.
func (q *quota) cutShort(written int) {
	if q == nil {
		return
	}
	q.cut = true
	q.out = max(q.out, int64(written/4))
}

// settle replaces the request's reservations by what it used, once, in one store call.
// Reservations made in a window that has ended since stay in it; what the request used
// beyond them goes to the current window, in place of the reservations made in it. The
// count is kept even when the client has gone: the tokens were spent. A store that fails
// here, or a request whose redis_timeout its other calls spent, leaves the reservations
// counted in place of the usage: limits err on the strict side.
func (q *quota) settle(ctx context.Context) {
	if q == nil || q.settled || !q.key.countsTokens() {
		return
	}
	q.settled = true
	used := q.used
	if q.cut {
		used = max(used, q.input+q.out)
	}
	now := q.svc.now()
	var deltas []store.Delta
	for _, l := range q.key.limits() {
		if !l.tokens() {
			continue
		}
		key, left := l.w.at(q.id, now)
		var ended, current int64
		for _, r := range q.reservations {
			if then, _ := l.w.at(q.id, r.at); then == key {
				current += r.tokens
			} else {
				ended += r.tokens
			}
		}
		if n := max(used-ended, 0) - current; n != 0 {
			deltas = append(deltas, store.Delta{Key: key, N: n, TTL: left + counterTTLMargin})
		}
	}
	if len(deltas) > 0 {
		_, _, _ = q.svc.opts.Counters.Add(context.WithoutCancel(ctx), deltas...)
	}
}

// inputEstimate is the input tokens of a request by estimate, at 4 bytes a token: its
// messages (the system prompt among them), tools and response_format schema, each image
// at imageTokens.
func inputEstimate(req *chat.Request) int64 {
	var bytes, images int64
	for i := range req.Messages {
		m := &req.Messages[i]
		bytes += int64(len(m.Content) + len(m.ToolCallID) + len(m.Name))
		for _, p := range m.Parts {
			bytes += int64(len(p.Text))
			if p.Image != nil {
				images++
			}
			if p.File != nil {
				bytes += int64(len(p.File.Data))
			}
		}
		for _, c := range m.ToolCalls {
			bytes += int64(len(c.ID) + len(c.Name) + len(c.Arguments))
		}
		for _, r := range m.Reasoning {
			bytes += int64(len(r.Text))
		}
	}
	for _, t := range req.Tools {
		bytes += int64(len(t.Name) + len(t.Description) + len(t.Parameters))
	}
	if f := req.ResponseFormat; f != nil {
		bytes += int64(len(f.Description) + len(f.Schema))
	}
	return bytes/4 + images*imageTokens
}

// outputEstimate is the output a request may use: the maxTokens its translation sends
// (its max_tokens, else default_max_tokens, with a thinking budget), else the model's
// maximum output, else unknownOutputReservation.
func outputEstimate(p *prepared) int64 {
	if c := p.converse.InferenceConfig; c != nil && c.MaxTokens != nil {
		return int64(*c.MaxTokens)
	}
	if p.model.MaxOutput > 0 {
		return int64(p.model.MaxOutput)
	}
	return unknownOutputReservation
}
