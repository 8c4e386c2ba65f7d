package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// TestBudgetIsShared: a request's calls to a Redis that hangs, not yet known to be down,
// share one budget: the first call waits out the whole budget (not its own timeout, 5 s
// here), and the next ones fail at once with ErrBudgetSpent, without reaching the
// server. Before, each call had 100 ms of its own: 204 ms for a key with token limits on
// a failover alias, 506 ms on a thinking tool-result turn. The server sees at most the
// first call's connection: go-redis dials on a goroutine of its own and gives the dial up
// with the call, so on a loaded CPU the budget may run out before it connects.
func TestBudgetIsShared(t *testing.T) {
	t.Parallel()
	srv := redistest.StartSilent(t)
	g := newGuarded(t, srv.URL(), -1) // no pings: the store is not known to be down
	ctx := WithBudget(t.Context(), 50*time.Millisecond)
	_, err := incr(g, ctx, "k", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, "timeout", errorClass(err), "%v", err)
	assert.NoError(t, ctx.Err(), "the request goes on")
	for i, err := range callAll(g.Guard, ctx) {
		assert.ErrorIs(t, err, ErrBudgetSpent, "call %d", i)
	}
	assert.LessOrEqual(t, srv.Connections(), 1, "none but the first call's reached the server")
	assert.Equal(t, 2.0, g.errors(t, metrics.StoreIncr), "every call made without the store is counted")
	assert.Equal(t, "redis not reached yet", g.Status(), "no verdict on the store")
}

// TestBudgetSpendsWhatCallsTake: with a Redis that answers, a budget is spent only by the
// time the calls take: many calls fit in it, whether one after another or at once.
func TestBudgetSpendsWhatCallsTake(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	g := newGuarded(t, srv.URL(), -1)
	ctx := WithBudget(t.Context(), 5*time.Second)
	for i := range 50 {
		_, err := incr(g, ctx, "k", 1, time.Minute)
		require.NoError(t, err, "call %d", i)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, _, err := g.Get(ctx, "k")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, "50", srv.Do("GET", KeyPrefix+"k"))
}

// TestWithBudgetZero: a budget of 0 is none; each call has the store's own timeout.
func TestWithBudgetZero(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	assert.Equal(t, ctx, WithBudget(ctx, 0))
	callCtx, done, err := spend(ctx)
	require.NoError(t, err)
	done()
	assert.Equal(t, ctx, callCtx)

	spent := WithBudget(ctx, time.Nanosecond)
	callCtx, done, err = spend(spent)
	require.NoError(t, err)
	<-callCtx.Done()
	done()
	_, _, err = spend(spent)
	require.ErrorIs(t, err, ErrBudgetSpent)
	assert.NoError(t, spent.Err())
}

// burst makes n concurrent counter additions through each of the Redis clients, as n
// requests arriving at once on each replica do (one reservation each), and returns
// their errors.
func burst(ctx context.Context, n int, replicas ...*Redis) []error {
	return busyBurst(ctx, n, 0, replicas...)
}

// busyBurst is burst with each request hashing busy bytes before its reservation and
// after it, as a gateway is busy decoding and translating requests: the calls then
// compete for the CPU with the requests around them.
func busyBurst(ctx context.Context, n, busy int, replicas ...*Redis) []error {
	var wg sync.WaitGroup
	errs := make(chan error, n*len(replicas))
	start := make(chan struct{})
	for _, r := range replicas {
		for i := range n {
			wg.Go(func() {
				<-start
				spin(busy)
				_, _, err := r.Add(ctx, Delta{Key: fmt.Sprint("rpm", i%7), N: 1, TTL: time.Minute},
					Delta{Key: "tpm", N: 1000, TTL: time.Minute})
				errs <- err
				spin(busy)
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// spin keeps the CPU busy hashing n bytes.
func spin(n int) {
	block := make([]byte, 16<<10)
	for ; n > 0; n -= len(block) {
		block[0] = byte(sha256.Sum256(block)[0])
	}
}

// TestRedisBurst: a burst of 100 concurrent reservations on each of two replicas, on cold
// pools, gets a connection at once for every call: no call waits for the pool (poolSize),
// so none can time out waiting there and fail its limits open.
func TestRedisBurst(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	replicas := []*Redis{newTestRedis(t, srv.URL()), newTestRedis(t, srv.URL())}
	for i, err := range burst(t.Context(), 100, replicas...) {
		require.NoError(t, err, "call %d", i)
	}
	for i, r := range replicas {
		stats := r.client.PoolStats()
		assert.Zero(t, stats.WaitCount, "replica %d: calls that waited for a connection", i)
		assert.Zero(t, stats.Timeouts, "replica %d", i)
	}
	assert.Equal(t, "200000", srv.Do("GET", KeyPrefix+"tpm"))
}

// BenchmarkRedisBurst measures bursts of 100 concurrent reservations on each of two
// replicas with the default budget (CallTimeout): the calls that failed (limits failed
// open) per burst, and the slowest burst. Cold: new clients for each burst, every
// connection dialed by the burst; warm: the same clients throughout. pool_size=20 is
// go-redis's default on 2 cores.
func BenchmarkRedisBurst(b *testing.B) {
	srv := redistest.Start(b)
	for _, pool := range []int{poolSize, 20} {
		u := srv.URL() + "?" + url.Values{"pool_size": {fmt.Sprint(pool)}}.Encode()
		for _, tt := range []struct{ cold, busy bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
			cold, busy := tt.cold, 0
			if tt.busy {
				busy = 256 << 10
			}
			b.Run(fmt.Sprintf("pool=%d/cold=%v/busy=%v", pool, cold, tt.busy), func(b *testing.B) {
				var replicas []*Redis
				connect := func() {
					replicas = replicas[:0]
					for range 2 {
						r, err := NewRedis(u, CallTimeout)
						require.NoError(b, err)
						replicas = append(replicas, r)
					}
				}
				closeAll := func() {
					for _, r := range replicas {
						_ = r.Close()
					}
				}
				connect()
				if !cold {
					burst(context.Background(), 100, replicas...)
				}
				var failed, bursts int
				var slowest time.Duration
				for b.Loop() {
					if cold {
						closeAll()
						connect()
					}
					start := time.Now()
					for _, err := range busyBurst(context.Background(), 100, busy, replicas...) {
						if err != nil {
							failed++
						}
					}
					slowest = max(slowest, time.Since(start))
					bursts++
				}
				closeAll()
				b.ReportMetric(float64(failed)/float64(bursts), "failed/burst")
				b.ReportMetric(float64(slowest.Microseconds())/1000, "slowest-burst-ms")
			})
		}
	}
}
