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
	r, err := newRedis(url, testTimeout)
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

// TestGuardOutage: while Redis is down every call fails, and is counted by operation;
// gateway_store_up and the status say so; one warning goes out per WarnEvery, naming the
// operation and the class of error, never a key or a value. Once Redis is back, the next
// call succeeds and the Guard says so.
func TestGuardOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := newGuarded(t, srv.URL(), -1) // no pings: the calls decide
	ctx := t.Context()
	for _, err := range callAll(g.Guard, ctx) {
		require.NoError(t, err)
	}
	assert.Equal(t, "redis", g.Status())
	assert.Equal(t, 1.0, g.up(t))

	srv.Stop()
	for range 3 {
		for i, err := range callAll(g.Guard, ctx) {
			assert.Error(t, err, "call %d", i)
		}
	}
	assert.Equal(t, 3.0, g.errors(t, metrics.StoreIncr))
	assert.Equal(t, 3.0, g.errors(t, metrics.StoreCounts))
	assert.Equal(t, 3.0, g.errors(t, metrics.StorePut))
	assert.Equal(t, 6.0, g.errors(t, metrics.StoreGet), "Get and GetMany")
	assert.Equal(t, 0.0, g.up(t))
	assert.Equal(t, "redis unreachable", g.Status())

	warnings := g.logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
	require.Len(t, warnings, 1, "at most one warning every %v", WarnEvery)
	fields := warnings[0].ContextMap()
	assert.Equal(t, "redis", fields["store"])
	assert.Equal(t, metrics.StoreIncr, fields["op"])
	assert.Contains(t, []any{"connection lost", "connection refused"}, fields["error"])
	assert.EqualValues(t, 1, fields["failures"])

	// A call whose caller has gone is not the store's failure.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err := incr(g, gone, "k", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, 3.0, g.errors(t, metrics.StoreIncr))

	g.clock.Advance(WarnEvery)
	_, _, err = g.Get(ctx, "key-name-in-redis")
	require.Error(t, err)
	warnings = g.logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
	require.Len(t, warnings, 2, "the next warning once %v has passed", WarnEvery)
	fields = warnings[1].ContextMap()
	assert.Equal(t, metrics.StoreGet, fields["op"])
	assert.Equal(t, "connection refused", fields["error"])
	assert.EqualValues(t, 15, fields["failures"], "the failures since the last warning")

	srv.Restart()
	// go-redis may hold off dialing for a moment after many refused dials: call until a
	// call succeeds.
	require.Eventually(t, func() bool {
		_, err := incr(g, ctx, "key-name-in-redis", 1, time.Minute)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, 1.0, g.up(t))
	assert.Equal(t, "redis", g.Status())
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

// TestGuardStartsWithoutRedis: a Guard in front of a Redis nobody runs is made at once,
// and is not up until something answered; its calls fail.
func TestGuardStartsWithoutRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop()
	g := newGuarded(t, "redis://"+addr, -1)
	assert.Equal(t, "redis not reached yet", g.Status())
	assert.Equal(t, 0.0, g.up(t), "not up before it answered")
	_, err := incr(g, t.Context(), "k", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, "redis unreachable", g.Status())
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
