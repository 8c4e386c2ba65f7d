package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// guarded is a Guard in front of the Redis at url, with its metrics and logs.
type guarded struct {
	*Guard
	metrics *metrics.Metrics
	logs    *observer.ObservedLogs
	clock   *clocktest.Clock
}

func newGuarded(t *testing.T, url string, pingEvery time.Duration) guarded {
	t.Helper()
	return newGuardedWith(t, url, pingEvery, testTimeout)
}

// newGuardedWith is newGuarded with timeout bounding each call, and each ping.
func newGuardedWith(t *testing.T, url string, pingEvery, timeout time.Duration) guarded {
	t.Helper()
	r, err := NewRedis(url, timeout)
	require.NoError(t, err)
	m := metrics.New()
	core, logs := observer.New(zap.InfoLevel)
	clk := clocktest.New(time.Unix(1e9, 0))
	g := NewGuard(r, GuardOptions{Name: "redis", Metrics: m, Log: zap.New(core), PingEvery: pingEvery, Now: clk.Now})
	t.Cleanup(func() { require.NoError(t, g.Close()) })
	return guarded{g, m, logs, clk}
}

// value is the value of the one series of family name with the label pairs given.
func (g guarded) value(t *testing.T, name string, labelPairs ...string) float64 {
	t.Helper()
	families, err := g.metrics.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			for i := 0; i < len(labelPairs); i += 2 {
				for _, l := range s.GetLabel() {
					if l.GetName() == labelPairs[i] && l.GetValue() != labelPairs[i+1] {
						continue series
					}
				}
			}
			if s.GetGauge() != nil {
				return s.GetGauge().GetValue()
			}
			return s.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labelPairs)
	return 0
}

func (g guarded) errors(t *testing.T, op string) float64 {
	return g.value(t, "gateway_store_errors_total", "op", op)
}

func (g guarded) up(t *testing.T) float64 { return g.value(t, "gateway_store_up") }

// callAll makes one call of each kind, key and value named so a log holding them shows.
func callAll(g *Guard, ctx context.Context) []error {
	_, errIncr := incr(g, ctx, "key-name-in-redis", 1, time.Minute)
	_, errCounts := g.Counts(ctx, "key-name-in-redis")
	errPut := g.Put(ctx, "key-name-in-redis", []byte("value-in-redis"), time.Minute)
	_, _, errGet := g.Get(ctx, "key-name-in-redis")
	_, errMany := g.GetMany(ctx, "key-name-in-redis")
	return []error{errIncr, errCounts, errPut, errGet, errMany}
}

// TestGuardOutage: once Redis stops, every call fails, and is counted by operation; the
// pings notice, and gateway_store_up and the status say so; from then on calls are not
// sent (ErrDown), and still counted. One warning goes out per WarnEvery, naming the
// operation and the class of error, never a key or a value. Once Redis is back, a ping
// notices, the Guard says so, and calls are sent again.
func TestGuardOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := newGuarded(t, srv.URL(), 10*time.Millisecond)
	ctx := t.Context()
	require.Eventually(t, func() bool { return g.Status() == "redis" }, 10*time.Second, 5*time.Millisecond)
	for _, err := range callAll(g.Guard, ctx) {
		require.NoError(t, err)
	}
	assert.Equal(t, 1.0, g.up(t))

	srv.Stop()
	for range 3 {
		for i, err := range callAll(g.Guard, ctx) {
			assert.Error(t, err, "call %d", i) // refused, or not sent once a ping failed
		}
	}
	assert.Equal(t, 3.0, g.errors(t, metrics.StoreIncr))
	assert.Equal(t, 3.0, g.errors(t, metrics.StoreCounts))
	assert.Equal(t, 3.0, g.errors(t, metrics.StorePut))
	assert.Equal(t, 6.0, g.errors(t, metrics.StoreGet), "Get and GetMany")
	require.Eventually(t, func() bool { return g.Status() == "redis unreachable" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 0.0, g.up(t))
	for i, err := range callAll(g.Guard, ctx) {
		assert.ErrorIs(t, err, ErrDown, "call %d is not sent", i)
	}
	assert.Equal(t, 4.0, g.errors(t, metrics.StoreIncr), "and counted")

	warnings := g.logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
	require.Len(t, warnings, 1, "at most one warning every %v", WarnEvery)
	fields := warnings[0].ContextMap()
	assert.Equal(t, "redis", fields["store"])
	assert.Contains(t, []any{metrics.StoreIncr, "ping"}, fields["op"], "the first failure: the first call after the stop, or a ping")
	assert.Contains(t, []any{"connection lost", "connection refused"}, fields["error"])
	assert.EqualValues(t, 1, fields["failures"])

	srv.Restart()
	require.Eventually(t, func() bool { return g.Status() == "redis" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1.0, g.up(t))
	_, err := incr(g, ctx, "key-name-in-redis", 1, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "1", srv.Do("GET", KeyPrefix+"key-name-in-redis"), "the restarted Redis holds the new count")
	back := g.logs.FilterMessageSnippet("answers again").AllUntimed()
	require.Len(t, back, 1)
	assert.Equal(t, zapcore.InfoLevel, back[0].Level)

	for _, e := range g.logs.AllUntimed() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		assert.NotContains(t, line, "key-name-in-redis")
		assert.NotContains(t, line, "value-in-redis")
		assert.NotContains(t, line, srv.Addr(), "the log says what failed, not the go-redis text")
	}
}

// TestGuardCallerGone: a call whose caller has gone fails, and is not counted as the
// store's failure, nor asks for a ping.
func TestGuardCallerGone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := newGuarded(t, srv.URL(), -1)
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := incr(g, gone, "k", 1, time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0.0, g.errors(t, metrics.StoreIncr))
	assert.Empty(t, g.check, "no ping asked for")
}

// TestGuardPings: with no calls at all, the pings follow Redis going away and coming back,
// on gateway_store_up and the status; they are not counted as call errors. Close stops
// them (goleak checks the package).
func TestGuardPings(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := newGuarded(t, srv.URL(), 10*time.Millisecond)
	require.Eventually(t, func() bool { return g.Status() == "redis" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1.0, g.up(t))

	srv.Stop()
	require.Eventually(t, func() bool { return g.Status() == "redis unreachable" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 0.0, g.up(t))
	warnings := g.logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
	require.NotEmpty(t, warnings)
	assert.Equal(t, "ping", warnings[0].ContextMap()["op"])
	for _, op := range []string{metrics.StoreIncr, metrics.StoreCounts, metrics.StorePut, metrics.StoreGet} {
		assert.Equal(t, 0.0, g.errors(t, op), op)
	}

	srv.Restart()
	require.Eventually(t, func() bool { return g.Status() == "redis" }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1.0, g.up(t))

	require.NoError(t, g.Close())
	require.NoError(t, g.Close(), "Close twice")
}

// TestGuardSkipsWhileDown: once a ping to a Redis that accepts connections and never
// answers has failed, calls fail at once with ErrDown, without reaching the server, and
// are counted; before, each call waited out its timeout (100 ms per call, so 506 ms on a
// thinking tool-result turn).
func TestGuardSkipsWhileDown(t *testing.T) {
	t.Parallel()
	srv := redistest.StartSilent(t)
	g := newGuardedWith(t, srv.URL(), time.Hour, CallTimeout) // one ping, at once
	require.Eventually(t, func() bool { return g.Status() == "redis unreachable" }, 10*time.Second, time.Millisecond)
	assert.Equal(t, 0.0, g.up(t))
	assert.Equal(t, 1, srv.Connections(), "the ping's")
	for i, err := range callAll(g.Guard, t.Context()) {
		assert.ErrorIs(t, err, ErrDown, "call %d", i)
	}
	assert.Equal(t, 0, srv.Connections(), "no call reached the server")
	assert.Equal(t, 1.0, g.errors(t, metrics.StoreIncr), "counted all the same")
	assert.Equal(t, 2.0, g.errors(t, metrics.StoreGet))
	assert.Empty(t, g.check, "a call not sent asks for no ping")
}

// TestGuardFailedCallAsksForAPing: a call that times out on a Redis that stopped
// answering (CLIENT PAUSE) asks for a ping at once, which finds it down: the next calls
// are not sent, without waiting for the next tick of the pings.
func TestGuardFailedCallAsksForAPing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := newGuardedWith(t, srv.URL(), time.Hour, CallTimeout) // one ping, at once
	require.Eventually(t, func() bool { return g.Status() == "redis" }, 10*time.Second, time.Millisecond)
	require.Equal(t, "+OK", srv.Do("CLIENT", "PAUSE", "60000", "ALL"))
	_, err := incr(g, t.Context(), "k", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, "timeout", errorClass(err), "%v", err)
	require.Eventually(t, func() bool { return g.Status() == "redis unreachable" }, 10*time.Second, time.Millisecond)
	_, err = incr(g, t.Context(), "k", 1, time.Minute)
	require.ErrorIs(t, err, ErrDown)
	assert.Equal(t, 2.0, g.errors(t, metrics.StoreIncr))
}

// TestGuardFailedCallIsNoVerdict: a call that runs out of time while Redis answers (as a
// call waiting for a connection in a burst does) is counted and warned, and asks for a
// ping, which finds Redis up: the calls after it are sent. A burst cannot turn limits off
// for everyone.
func TestGuardFailedCallIsNoVerdict(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := newGuarded(t, srv.URL(), time.Hour) // one ping, at once
	require.Eventually(t, func() bool { return g.Status() == "redis" }, 10*time.Second, time.Millisecond)
	_, err := incr(g, WithBudget(t.Context(), time.Nanosecond), "k", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, "timeout", errorClass(err), "%v", err)
	assert.Equal(t, 1.0, g.errors(t, metrics.StoreIncr))
	require.Len(t, g.logs.FilterMessageSnippet("the shared store failed").AllUntimed(), 1)
	// The ping it asked for answers, and says so.
	require.Eventually(t, func() bool { return g.logs.FilterMessageSnippet("answers again").Len() == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "redis", g.Status())
	assert.Equal(t, 1.0, g.up(t))
	v, err := incr(g, t.Context(), "k", 1, time.Minute)
	require.NoError(t, err, "sent")
	assert.Equal(t, int64(1), v)
}

// TestGuardStartsWithoutRedis: a Guard in front of a Redis nobody runs is made at once,
// and is not up until a ping answered; until a ping failed, its calls are sent (and
// refused), since the store may be on its way up.
func TestGuardStartsWithoutRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop()
	g := newGuarded(t, "redis://"+addr, -1) // no pings
	assert.Equal(t, "redis not reached yet", g.Status())
	assert.Equal(t, 0.0, g.up(t), "not up before it answered")
	_, err := incr(g, t.Context(), "k", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, "connection refused", errorClass(err), "sent: %v", err)
	assert.Equal(t, "redis not reached yet", g.Status(), "a call's failure is no verdict")
	assert.Equal(t, 1.0, g.errors(t, metrics.StoreIncr))
}

// TestErrorClass: what a warning says of an error; Redis's own refusals by their code.
func TestErrorClass(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		context.DeadlineExceeded:                     "timeout",
		fmt.Errorf("dial: %w", syscall.ECONNREFUSED): "connection refused",
		fmt.Errorf("read: %w", io.EOF):               "connection lost",
		errors.New("something else"):                 "other",
	} {
		assert.Equal(t, want, errorClass(err), "%v", err)
	}

	srv := redistest.Start(t)
	r := newTestRedis(t, srv.URL())
	require.Equal(t, "+OK", srv.Do("SET", KeyPrefix+"text", "abc"))
	_, err := incr(r, t.Context(), "text", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, "redis ERR", errorClass(err), "%v", err)
	require.Equal(t, ":1", srv.Do("LPUSH", KeyPrefix+"list", "x"))
	_, _, err = r.Get(t.Context(), "list")
	require.Error(t, err)
	assert.Equal(t, "redis WRONGTYPE", errorClass(err), "%v", err)

	for msg, want := range map[string]string{
		"NOAUTH Authentication required.": "NOAUTH",
		"weird reply":                     "error",
		"LOADING":                         "LOADING",
		"Err lower case":                  "error",
		strings.Repeat("A", 40) + " x":    "error",
	} {
		assert.Equal(t, want, replyCode(msg), msg)
	}
}

// TestGuardProbesWhatCallsUse: a server that answers PING and nothing else (a proxy
// answering health checks itself while the Redis behind it hangs) is found down: the
// Guard's probe is a read of the keyspace, as the calls are, not a PING.
func TestGuardProbesWhatCallsUse(t *testing.T) {
	t.Parallel()
	g := newGuardedWith(t, redistest.StartPingOnly(t), time.Hour, CallTimeout) // one probe, at once
	require.Eventually(t, func() bool { return g.Status() == "redis unreachable" }, 10*time.Second, time.Millisecond)
	_, err := incr(g, t.Context(), "k", 1, time.Minute)
	assert.ErrorIs(t, err, ErrDown, "calls skip it")
}

// TestGuardSlowPingIsNoOutage: a Redis that takes longer than one call may (300 ms, the
// call timeout 100 ms) to answer the first ping, as a new connection's handshake on a busy
// host can, is up once it answers: the ping's verdict holds for every request, so it waits
// longer than a call does. Before, the store was skipped by every request until the next
// ping.
func TestGuardSlowPingIsNoOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	require.Equal(t, "+OK", srv.Do("CLIENT", "PAUSE", "300", "ALL"))
	g := newGuardedWith(t, srv.URL(), time.Hour, CallTimeout) // one ping, at once
	require.Eventually(t, func() bool { return g.Status() != "redis not reached yet" }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "redis", g.Status(), "the slow ping answered")
	assert.Equal(t, 1.0, g.up(t))
}
