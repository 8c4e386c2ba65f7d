package store

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/nirmata/llm-gateway/internal/redistest"
)

// TestMain checks that no test leaves a goroutine behind, but go-redis's dial probe: after
// failed dials (a Redis stopped or never started) its pool probes once a second, and the
// probe sees that the pool was closed only when it wakes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// testTimeout bounds a call in the tests of what calls do: CallTimeout is tight for a
// machine running every test at once under the race detector.
const testTimeout = 5 * time.Second

// newTestRedis is a Redis store for one test, with testTimeout.
func newTestRedis(t *testing.T, url string) *Redis {
	t.Helper()
	r, err := NewRedis(url, testTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// pttl is the milliseconds the server says key has left.
func pttl(t *testing.T, srv *redistest.Server, key string) int {
	t.Helper()
	reply := srv.Do("PTTL", KeyPrefix+key)
	n, err := strconv.Atoi(strings.TrimPrefix(reply, ":"))
	require.NoError(t, err, reply)
	return n
}

// TestRedisIncrIsAtomic: goroutines incrementing one counter through two clients, as two
// replicas would, lose no increment, and each gets a value no other got.
func TestRedisIncrIsAtomic(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	replicas := []*Redis{newTestRedis(t, srv.URL()), newTestRedis(t, srv.URL())}
	const workers, each = 8, 40
	got := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		r := replicas[w%2]
		wg.Go(func() {
			for range each {
				v, err := incr(r, t.Context(), "rpm", 1, time.Minute)
				if assert.NoError(t, err) {
					got <- v
				}
			}
		})
	}
	wg.Wait()
	close(got)
	var values []int64
	for v := range got {
		values = append(values, v)
	}
	slices.Sort(values)
	want := make([]int64, workers*each)
	for i := range want {
		want[i] = int64(i + 1)
	}
	assert.Equal(t, want, values, "every increment counted once, each caller saw its own value")
	counts, err := replicas[1].Counts(t.Context(), "rpm")
	require.NoError(t, err)
	assert.Equal(t, []int64{workers * each}, counts)
}

// TestRedisWindow: a counter's window starts at its first Incr and is not stretched by the
// next ones; once it ends, the next Incr starts a new window from zero. A counter found
// without an expiry gets one.
func TestRedisWindow(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.URL())
	ctx := t.Context()

	v, err := incr(r, ctx, "w", 5, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(5), v)
	first := pttl(t, srv, "w")
	assert.True(t, first > 0 && first <= 60_000, "%d ms", first)
	v, err = incr(r, ctx, "w", 2, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, int64(7), v)
	assert.LessOrEqual(t, pttl(t, srv, "w"), first, "the window is the first Incr's")

	require.Equal(t, "+OK", srv.Do("SET", KeyPrefix+"bare", "3"))
	v, err = incr(r, ctx, "bare", 1, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(4), v)
	assert.Positive(t, pttl(t, srv, "bare"), "a counter without an expiry gets one")

	_, err = incr(r, ctx, "short", 3, 50*time.Millisecond)
	require.NoError(t, err)
	// Redis ends the window: nothing else can bring the count back to 0.
	require.Eventually(t, func() bool {
		c, err := r.Counts(ctx, "short")
		return err == nil && c[0] == 0
	}, 5*time.Second, 5*time.Millisecond)
	v, err = incr(r, ctx, "short", 1, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1), v, "a new window")
	assert.Greater(t, pttl(t, srv, "short"), 50, "with the new window's expiry")
}

// TestRedisCounts: missing counters are 0, in the order asked; something that is not a
// counter is an error, not a number made up.
func TestRedisCounts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.URL())
	ctx := t.Context()
	_, err := incr(r, ctx, "b", 7, time.Minute)
	require.NoError(t, err)
	counts, err := r.Counts(ctx, "a", "b", "c")
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 7, 0}, counts)
	counts, err = r.Counts(ctx)
	require.NoError(t, err)
	assert.Empty(t, counts)

	require.Equal(t, "+OK", srv.Do("SET", KeyPrefix+"text", "not a number"))
	_, err = r.Counts(ctx, "b", "text")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "not a number", "a stored value is not quoted")
}

// TestRedisValues: values come back byte for byte, expire with their TTL, and a missing
// one is no error; GetMany reads several in one call.
func TestRedisValues(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.URL())
	ctx := t.Context()
	value := []byte("blocks\x00\xff{}")
	require.NoError(t, r.Put(ctx, "v1", value, time.Hour))
	require.NoError(t, r.Put(ctx, "v2", []byte("two"), time.Hour))

	got, ok, err := r.Get(ctx, "v1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, value, got)
	left := pttl(t, srv, "v1")
	assert.True(t, left > 0 && left <= 3_600_000, "%d ms", left)

	_, ok, err = r.Get(ctx, "missing")
	require.NoError(t, err)
	assert.False(t, ok)

	many, err := r.GetMany(ctx, "v2", "missing", "v1")
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("two"), nil, value}, many)

	require.NoError(t, r.Delete(ctx, "v1"))
	_, ok, err = r.Get(ctx, "v1")
	require.NoError(t, err)
	assert.False(t, ok, "deleted")
	require.NoError(t, r.Delete(ctx, "v1"), "a missing value deletes without error")
	require.NoError(t, r.Put(ctx, "v1", value, time.Hour))

	require.NoError(t, r.Put(ctx, "v2", []byte("replaced"), 50*time.Millisecond))
	got, _, err = r.Get(ctx, "v2")
	require.NoError(t, err)
	assert.Equal(t, []byte("replaced"), got)
	require.Eventually(t, func() bool {
		_, ok, err := r.Get(ctx, "v2")
		return err == nil && !ok
	}, 5*time.Second, 5*time.Millisecond, "expired with its TTL")
}

// TestRedisKeysArePrefixed: everything the gateway writes is under KeyPrefix.
func TestRedisKeysArePrefixed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.URL())
	_, err := incr(r, t.Context(), "c", 1, time.Minute)
	require.NoError(t, err)
	require.NoError(t, r.Put(t.Context(), "v", []byte("x"), time.Minute))
	assert.Equal(t, ":2", srv.Do("EXISTS", "llmgw:c", "llmgw:v"))
	assert.Equal(t, ":2", srv.Do("DBSIZE"), "nothing else")
}

// TestRedisCallsAreBounded: a server that accepts connections and never answers costs a
// call CallTimeout, with no retry after it; a stopped one is refused at once.
func TestRedisCallsAreBounded(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	conns.Go(func() {
		var held []net.Conn
		for {
			c, err := lis.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	})
	t.Cleanup(func() { lis.Close(); conns.Wait() })

	r, err := NewRedis("redis://"+lis.Addr().String(), 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	for name, call := range map[string]func(ctx context.Context) error{
		"incr":   func(ctx context.Context) error { _, err := incr(r, ctx, "k", 1, time.Minute); return err },
		"counts": func(ctx context.Context) error { _, err := r.Counts(ctx, "k"); return err },
		"put":    func(ctx context.Context) error { return r.Put(ctx, "k", []byte("v"), time.Minute) },
		"get":    func(ctx context.Context) error { _, _, err := r.Get(ctx, "k"); return err },
		"ping":   r.Ping,
	} {
		bound := CallTimeout
		if name == "ping" {
			bound = minPingTimeout // in the background: a ping waits longer than a call
		}
		start := time.Now()
		err := call(t.Context())
		took := time.Since(start)
		require.Error(t, err, name)
		assert.Equal(t, "timeout", errorClass(err), "%s: %v", name, err)
		assert.GreaterOrEqual(t, took, bound, name)
		assert.Less(t, took, 2*bound+400*time.Millisecond, "%s: one attempt, not retries", name)
	}

	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop()
	stopped := newTestRedis(t, "redis://"+addr)
	_, err = incr(stopped, t.Context(), "k", 1, time.Minute)
	require.Error(t, err)
	assert.Equal(t, "connection refused", errorClass(err), "%v", err)
}

// TestRedisTLS: rediss:// speaks TLS, and checks the server's certificate unless the URL
// says skip_verify=true.
func TestRedisTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.StartTLS(t)
	require.True(t, strings.HasPrefix(srv.URL(), "rediss://"))
	r := newTestRedis(t, srv.URL())
	assert.True(t, r.TLS())
	v, err := incr(r, t.Context(), "k", 2, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(2), v)

	checked := newTestRedis(t, "rediss://"+srv.Addr())
	_, err = incr(checked, t.Context(), "k", 1, time.Minute)
	require.Error(t, err, "a self-signed certificate is refused")
	assert.Equal(t, "tls", errorClass(err), "%v", err)

	plain := newTestRedis(t, "redis://"+srv.Addr())
	assert.False(t, plain.TLS())
	_, err = incr(plain, t.Context(), "k", 1, time.Minute)
	require.Error(t, err, "no plain text on a TLS port")
}

// TestParseURL: redis:// and rediss:// URLs as go-redis reads them; the timeouts and
// retries are the gateway's; no error quotes the password.
func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"redis://localhost:6379/0",
		"redis://cache.internal",
		"rediss://user:hunter2@cache.internal:6380/2",
		"redis://:hunter2@10.0.0.1:6379?pool_size=20&client_name=gateway",
	} {
		opts, err := ParseURL(ok)
		if assert.NoError(t, err, ok) {
			assert.Equal(t, strings.HasPrefix(ok, "rediss:"), opts.TLSConfig != nil, ok)
		}
	}
	for _, tt := range []struct{ url, want string }{
		{"http://cache.internal:6379", `want a redis:// or rediss:// URL, got scheme "http"`},
		{"unix:///run/redis.sock", `want a redis:// or rediss:// URL, got scheme "unix"`},
		{"cache.internal:6379", `want a redis:// or rediss:// URL, got scheme "cache.internal"`},
		{"redis://:hunter2%zz@cache.internal", "is not a URL like redis://[user:password@]host:6379[/db]"},
		{"redis://:hunter2@cache.internal/hunter2", `invalid database number: "xxxxx"`},
		{"redis://:hunter2@cache.internal?read_timeout=1s", "read_timeout is set by the gateway: redis_timeout bounds the calls, without retries"},
		{"redis://cache.internal?max_retries=3", "max_retries is set by the gateway: redis_timeout bounds the calls, without retries"},
		{"redis://cache.internal?protocol=3", "protocol is set by the gateway: RESP2, whose replies it bounds"},
		{"redis://cache.internal?pipeline_pool_size=10", "pipeline_pool_size is set by the gateway: transactions share the one pool, pool_size"},
		{"redis://:hunter2@cache.internal?password=hunter2", "unexpected option: password"},
		{"redis://cache.internal?pool_size=many", `invalid pool_size number: strconv.Atoi: parsing "many": invalid syntax`},
		{"redis://:hunter2@cache.internal:99999999", `port "99999999" is not a port from 1 to 65535`},
		{"redis://:hunter2@cache.internal:0", `port "0" is not a port from 1 to 65535`},
		{"redis://:hunter2@cache.internal:notaport/0", "has a port that is not a number; want redis://[user:password@]host:6379[/db]"},
		{"redis://:hunter2@cache.internal?skip_verify=true", "skip_verify applies to rediss:// (TLS) only"},
	} {
		_, err := ParseURL(tt.url)
		if assert.Error(t, err, tt.url) {
			assert.Equal(t, tt.want, err.Error(), tt.url)
			assert.NotContains(t, err.Error(), "hunter2")
		}
	}
}

// incr adds n to one counter, as most tests do.
func incr(c Counters, ctx context.Context, key string, n int64, ttl time.Duration) (int64, error) {
	v, _, err := c.Add(ctx, Delta{Key: key, N: n, TTL: ttl})
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// TestRedisAddIsOneTransaction: one Add of several counters returns each one's value,
// sets each one's expiry when it creates it, and no other Add comes between them.
func TestRedisAddIsOneTransaction(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := newTestRedis(t, srv.URL())
	ctx := t.Context()
	v, ok, err := r.Add(ctx, Delta{Key: "a", N: 1, TTL: time.Minute}, Delta{Key: "b", N: 500, TTL: time.Hour})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []int64{1, 500}, v)
	assert.InDelta(t, time.Hour.Milliseconds(), pttl(t, srv, "b"), 5000)
	assert.InDelta(t, time.Minute.Milliseconds(), pttl(t, srv, "a"), 5000)

	// Two replicas adding to the same pair at once: every pair of values one caller sees
	// is a state no other caller saw, and the two counters move together.
	other := newTestRedis(t, srv.URL())
	var wg sync.WaitGroup
	seen := make(chan [2]int64, 100)
	for w := range 4 {
		c := []*Redis{r, other}[w%2]
		wg.Go(func() {
			for range 25 {
				v, _, err := c.Add(ctx, Delta{Key: "a", N: 1, TTL: time.Minute}, Delta{Key: "b", N: 10, TTL: time.Hour})
				if assert.NoError(t, err) {
					seen <- [2]int64{v[0], v[1]}
				}
			}
		})
	}
	wg.Wait()
	close(seen)
	for pair := range seen {
		assert.Equal(t, 500+10*(pair[0]-1), pair[1], "a and b moved together")
	}
	counts, err := r.Counts(ctx, "a", "b")
	require.NoError(t, err)
	assert.Equal(t, []int64{101, 1500}, counts)
}

// TestRedisAddHoldsLimits: replicas adding at once to counters with limits are admitted
// while every counter with a limit is under it, so the count passes a limit by at most one
// addition; a refused Add adds nothing, to any of its counters, and says which limit
// refused it.
func TestRedisAddHoldsLimits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	replicas := []*Redis{newTestRedis(t, srv.URL()), newTestRedis(t, srv.URL())}
	ctx := t.Context()
	deltas := []Delta{{Key: "tokens", N: 300, TTL: time.Minute, Limit: 1000}, {Key: "requests", N: 1, TTL: time.Minute, Limit: 100}}
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		r := replicas[w%2]
		wg.Go(func() {
			for range 10 {
				counts, ok, err := r.Add(ctx, deltas...)
				if !assert.NoError(t, err) {
					return
				}
				if ok {
					admitted.Add(1)
					continue
				}
				refused.Add(1)
				assert.Equal(t, 0, Refused(deltas, counts), "the tokens' limit refused it: %v", counts)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(4), admitted.Load(), "0, 300, 600 and 900 are under 1000; 1200 is not")
	assert.Equal(t, int64(76), refused.Load())
	counts, err := replicas[0].Counts(ctx, "tokens", "requests")
	require.NoError(t, err)
	assert.Equal(t, []int64{1200, 4}, counts, "refused Adds added nothing")

	counts, ok, err := replicas[1].Add(ctx, Delta{Key: "tokens", N: -1200, TTL: time.Minute}, Delta{Key: "requests", N: 1, TTL: time.Minute, Limit: 4})
	require.NoError(t, err)
	assert.False(t, ok, "at its limit")
	assert.Equal(t, []int64{1200, 4}, counts, "as they stand")
	assert.Equal(t, 1, Refused([]Delta{{}, {Limit: 4}}, counts))
}
