package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/ratelog"
)

// Shared is a store every replica sees: Redis. A Guard stands in front of it.
type Shared interface {
	Counters
	Values
	Deleter
	// Ping asks the store whether it answers, on a connection of its own: calls waiting
	// for a connection (a burst) must not make it fail.
	Ping(ctx context.Context) error
	Close() error
}

// DefaultPingEvery is how often a Guard asks its store whether it answers: how long a
// store that is back may wait to be used again.
const DefaultPingEvery = 2 * time.Second

// WarnEvery is the least time between two warnings of a Guard (docs/PROTOCOL.md 14.3): a
// Redis that is down fails every request's calls, and one line says so.
const WarnEvery = ratelog.Every

// GuardOptions configures a Guard.
type GuardOptions struct {
	// Name names the store on /readyz and in logs: "redis".
	Name    string
	Metrics *metrics.Metrics
	Log     *zap.Logger
	// PingEvery is how often the store is pinged; 0 is DefaultPingEvery, below 0 never
	// (tests of calls to a store nothing has judged yet).
	PingEvery time.Duration
	// Now is the clock that spaces warnings; nil is time.Now. Tests move it.
	Now func() time.Time
}

// ErrDown is the error of a call made while the store is known to be down: it is not
// sent.
var ErrDown = errors.New("shared store skipped: its last ping failed")

// Guard applies the outage policy of docs/PROTOCOL.md 14.3 to every call to a shared
// store. Whether the store is up is decided by pings alone, every PingEvery on a
// connection of their own (Shared.Ping), and at once after a call failed: gateway_store_up and Status
// (/readyz) say so, and while the last ping failed calls are not sent at all (ErrDown), so
// a store that is down costs requests nothing, until a ping gets an answer again. A call
// that fails is no verdict on the store (a burst can make calls wait too long for a
// connection while Redis answers pings), so it cannot turn the store off for the others.
// A request's calls share the budget WithBudget put in its context. A failed or skipped
// call is counted in gateway_store_errors_total{op}; failures are logged as a warning at
// most every WarnEvery, with the operation and the class of error only (never a key or a
// value). The Guard returns the store's answers and errors: callers go on without the
// store (limits fail open, caches use their local copy). Safe for concurrent use.
type Guard struct {
	shared Shared
	opts   GuardOptions

	mu    sync.Mutex // held to change state, so that it and gateway_store_up agree
	state atomic.Int32
	// check asks watch for a ping now; it holds at most one request.
	check chan struct{}
	// warned: a warning went out since the store last answered a ping, so its return is
	// logged.
	warned atomic.Bool
	// warn spaces the warnings of failures out, WarnEvery apart.
	warn *ratelog.Limiter

	stop      context.CancelFunc
	stopped   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// States of a Guard's store, by its last ping.
const (
	stateUnknown int32 = iota // not asked yet: calls are sent
	stateUp
	stateDown // calls are not sent
)

// NewGuard returns a Guard in front of shared, and starts pinging it: the first ping goes
// out at once, in the background, so nothing waits for the store. Close stops the pings
// and closes shared.
func NewGuard(shared Shared, opts GuardOptions) *Guard {
	if opts.PingEvery == 0 {
		opts.PingEvery = DefaultPingEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	ctx, stop := context.WithCancel(context.Background())
	g := &Guard{shared: shared, opts: opts, check: make(chan struct{}, 1), stop: stop, stopped: make(chan struct{}),
		warn: ratelog.New(WarnEvery, "failures", opts.Now)}
	opts.Metrics.StoreUp(false) // until it answers
	if opts.PingEvery > 0 {
		go g.watch(ctx)
	} else {
		close(g.stopped)
	}
	return g
}

// Add implements Counters.
func (g *Guard) Add(ctx context.Context, deltas ...Delta) (v []int64, ok bool, err error) {
	err = g.call(ctx, metrics.StoreIncr, func(ctx context.Context) (err error) {
		v, ok, err = g.shared.Add(ctx, deltas...)
		return err
	})
	return v, ok, err
}

// Counts implements Counters.
func (g *Guard) Counts(ctx context.Context, keys ...string) (v []int64, err error) {
	err = g.call(ctx, metrics.StoreCounts, func(ctx context.Context) (err error) {
		v, err = g.shared.Counts(ctx, keys...)
		return err
	})
	return v, err
}

// Put implements Values.
func (g *Guard) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return g.call(ctx, metrics.StorePut, func(ctx context.Context) error {
		return g.shared.Put(ctx, key, value, ttl)
	})
}

// Get implements Values.
func (g *Guard) Get(ctx context.Context, key string) (v []byte, ok bool, err error) {
	err = g.call(ctx, metrics.StoreGet, func(ctx context.Context) (err error) {
		v, ok, err = g.shared.Get(ctx, key)
		return err
	})
	return v, ok, err
}

// GetMany implements Values.
func (g *Guard) GetMany(ctx context.Context, keys ...string) (v [][]byte, err error) {
	err = g.call(ctx, metrics.StoreGet, func(ctx context.Context) (err error) {
		v, err = g.shared.GetMany(ctx, keys...)
		return err
	})
	return v, err
}

// Delete implements Deleter.
func (g *Guard) Delete(ctx context.Context, key string) error {
	return g.call(ctx, metrics.StoreDelete, func(ctx context.Context) error {
		return g.shared.Delete(ctx, key)
	})
}

// call makes one call op to the store, unless the last ping failed (ErrDown) or the
// request's budget is spent (ErrBudgetSpent), bounded by what is left of that budget. A
// call whose caller has left or run out of time is not counted: not the store's doing.
func (g *Guard) call(ctx context.Context, op string, f func(context.Context) error) error {
	if g.state.Load() == stateDown {
		return g.skipped(ctx, op, ErrDown)
	}
	callCtx, done, err := spend(ctx)
	if err != nil {
		return g.skipped(ctx, op, err)
	}
	err = f(callCtx)
	done()
	if err != nil && ctx.Err() == nil {
		g.opts.Metrics.StoreError(op)
		g.failed(op, err)
		select { // ask for a ping now, unless one is asked for already
		case g.check <- struct{}{}:
		default:
		}
	}
	return err
}

// skipped counts a call that was not sent, and returns its error. The failure that made
// it so was warned of already.
func (g *Guard) skipped(ctx context.Context, op string, err error) error {
	if ctx.Err() == nil {
		g.opts.Metrics.StoreError(op)
	}
	return err
}

// Status describes the store for /readyz: its name while it answers, else "<name>
// unreachable" ("<name> not reached yet" before the first ping's answer or failure). The
// gateway stays ready either way: it serves without the store.
func (g *Guard) Status() string {
	switch g.state.Load() {
	case stateUp:
		return g.opts.Name
	case stateDown:
		return g.opts.Name + " unreachable"
	}
	return g.opts.Name + " not reached yet"
}

// Close stops the pings, waits for the last one, and closes the store. It is safe to call
// more than once.
func (g *Guard) Close() error {
	g.closeOnce.Do(func() {
		g.stop()
		<-g.stopped
		g.closeErr = g.shared.Close()
	})
	return g.closeErr
}

// watch pings the store until Close: at once, then every PingEvery, and when a failed
// call asks for one. A failed call asks at most one ping for as long as the ping before
// it takes, so a ping never waits behind another.
func (g *Guard) watch(ctx context.Context) {
	defer close(g.stopped)
	tick := time.NewTicker(g.opts.PingEvery)
	defer tick.Stop()
	for {
		err := g.shared.Ping(ctx)
		if ctx.Err() != nil {
			return
		}
		// The log says why before the state changes, so that whoever sees the change
		// (/readyz, gateway_store_up) finds its line.
		if err != nil {
			g.failed("ping", err)
			g.setState(stateDown)
		} else {
			g.answered()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-g.check:
		}
	}
}

// answered marks the store up after a ping, saying so first when a warning went out.
func (g *Guard) answered() {
	if g.warned.Swap(false) {
		g.opts.Log.Info("the shared store answers again: limits count and caches are shared", zap.String("store", g.opts.Name))
	}
	g.setState(stateUp)
}

// failed warns, unless a warning went out less than WarnEvery ago; each warning counts
// the failures it stands for.
func (g *Guard) failed(op string, err error) {
	if g.warn.Warn(g.opts.Log, "the shared store failed: limits fail open and caches use their local copy until it answers",
		zap.String("store", g.opts.Name), zap.String("op", op), zap.String("error", errorClass(err))) {
		g.warned.Store(true)
	}
}

// setState moves the store to state s.
func (g *Guard) setState(s int32) {
	if g.state.Load() == s {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state.Swap(s) != s {
		g.opts.Metrics.StoreUp(s == stateUp)
	}
}

// errorClass names the kind of a store error for the log. The error's own text is not
// logged: it is not the gateway's to bound, and a Redis reply may quote what it was sent.
func errorClass(err error) string {
	var redisErr redis.Error
	var tlsAlert tls.AlertError
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return "connection lost"
	case errors.Is(err, ErrReplyRefused):
		return "reply refused"
	case errors.Is(err, redis.ErrPoolTimeout):
		return "pool timeout"
	case errors.Is(err, redis.ErrClosed):
		return "closed"
	case errors.As(err, &certErr) || errors.As(err, &unknownAuthority) || errors.As(err, &hostErr) || errors.As(err, &tlsAlert):
		return "tls"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &redisErr):
		return "redis " + replyCode(redisErr.Error())
	case errors.As(err, &netErr):
		return "network"
	}
	return "other"
}

// replyCode is the code a Redis error reply starts with (WRONGTYPE, NOAUTH, READONLY,
// OOM, LOADING, ERR), or "error".
func replyCode(msg string) string {
	n := 0
	for n < len(msg) && n < 16 && msg[n] >= 'A' && msg[n] <= 'Z' {
		n++
	}
	if n == 0 || n < len(msg) && msg[n] != ' ' {
		return "error"
	}
	return msg[:n]
}
