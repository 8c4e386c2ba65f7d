package store

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/nirmata/llm-gateway/internal/clip"
)

// CallTimeout is the default of redis_timeout (docs/PROTOCOL.md 14.3): what one request
// may wait for Redis, all its calls together (WithBudget), and so what one call may take,
// connecting included.
const CallTimeout = 100 * time.Millisecond

// poolSize is the connections a Redis keeps, unless the URL's pool_size says otherwise. A
// call holds one for a round trip, so it bounds the calls in flight at once: beyond it a
// call waits for a connection, which eats its request's budget, and a call that runs out
// fails its limits open. On a loaded CPU a round trip lasts as long as its goroutine waits
// to run, so waits pile up: in a burst of 100 requests on two gateways of 2 cores
// (TestTokenLimitHoldsUnderABurst), 56 to 80 calls of each waited for one of go-redis's
// default 20 (10 per CPU), up to 1 s in all; with 128, none waited
// (TestRedisBurst holds it). A burst on a cold pool dials a connection per call (no more
// than the burst is wide); idle ones are closed after 30 minutes. A connection costs Redis
// little (maxclients is 10,000) and the gateway 64 KiB of buffers.
const poolSize = 128

// KeyPrefix starts every key the gateway writes, so that it can share a Redis with others.
const KeyPrefix = "llmgw:"

// gatewayOptions are the URL options the gateway sets itself, with why: redis_timeout
// bounds a request's calls, and a retry or a longer wait would stretch it; the reply
// bounds (resp.go) know RESP2's types only; one pool serves every call.
var gatewayOptions = []struct{ name, why string }{
	{"dial_timeout", timeoutsWhy}, {"read_timeout", timeoutsWhy}, {"write_timeout", timeoutsWhy},
	{"pool_timeout", timeoutsWhy}, {"max_retries", timeoutsWhy}, {"min_retry_backoff", timeoutsWhy},
	{"max_retry_backoff", timeoutsWhy},
	{"protocol", "RESP2, whose replies it bounds"},
	{"pipeline_pool_size", "transactions share the one pool, pool_size"},
}

const timeoutsWhy = "redis_timeout bounds the calls, without retries"

// ParseURL reads a redis_url as go-redis reads it (rediss:// turns TLS on, with the host's
// certificate checked), allowing the schemes redis and rediss only and none of
// gatewayOptions. Its errors never quote the URL's password.
func ParseURL(raw string) (*redis.Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's message quotes the whole URL, password included.
		if strings.Contains(err.Error(), "invalid port") {
			return nil, errors.New("has a port that is not a number; want redis://[user:password@]host:6379[/db]")
		}
		return nil, errors.New("is not a URL like redis://[user:password@]host:6379[/db]")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("want a redis:// or rediss:// URL, got scheme %s", clip.Quote(u.Scheme))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %s is not a port from 1 to 65535", clip.Quote(p))
		}
	}
	q := u.Query()
	if q.Has("skip_verify") && u.Scheme != "rediss" {
		return nil, errors.New("skip_verify applies to rediss:// (TLS) only")
	}
	for _, o := range gatewayOptions {
		if q.Has(o.name) {
			return nil, fmt.Errorf("%s is set by the gateway: %s", o.name, o.why)
		}
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "redis: ")
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		return nil, errors.New(clip.String(msg, clip.LogMax))
	}
	return opts, nil
}

// Redis is Counters and Values in a Redis server (7.0 or later, or Valkey), shared by
// every replica that uses it. Keys are KeyPrefix and the caller's key. Every call is one
// round trip bounded by its timeout, never retried: a failure is the caller's to handle
// (see Guard). Replies are bounded before go-redis reads them (resp.go). Connections are
// made on first use, so NewRedis does not wait for the server. Safe for concurrent use.
type Redis struct {
	client *redis.Client
	// pinger has a connection of its own for Ping, so that calls waiting for the pool
	// (a burst) cannot make the store look down: Ping asks Redis, not the pool.
	pinger  *redis.Client
	addr    string
	tls     bool
	timeout time.Duration
}

// NewRedis returns the store at raw, a URL ParseURL accepts, whose calls each take at
// most timeout (redis_timeout; 0 is CallTimeout). It does not connect.
func NewRedis(raw string, timeout time.Duration) (*Redis, error) {
	if timeout <= 0 {
		timeout = CallTimeout
	}
	opts, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	// Each call is bounded by its context (the request's budget, and timeout) and by
	// these; one dial attempt, no retries, so a Redis that is down costs a request one
	// refused connection, not a series of backoffs.
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = timeout, timeout, timeout, timeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	if opts.PoolSize == 0 {
		opts.PoolSize = poolSize
	}
	// Transactions (Add) take their connection from the one pool, which poolSize sizes,
	// rather than from a second one of 10.
	opts.PipelinePoolSize = -1
	// RESP2: the replies the gateway's commands get need no more, and boundedConn then
	// knows every type byte Redis may send. On a new connection, HELLO 2 (with AUTH) and
	// SELECT only: no CLIENT SETINFO, no maintenance-notification handshake (a Redis
	// Enterprise feature, RESP3 only).
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if opts.TLSConfig != nil && opts.TLSConfig.RootCAs == nil {
		// Read the system's roots now rather than in the first handshake, where reading
		// them (tens of milliseconds) would eat that call's budget.
		if roots, err := x509.SystemCertPool(); err == nil {
			opts.TLSConfig.RootCAs = roots
		}
	}
	opts.Dialer = dialer(opts.TLSConfig)
	pingOpts := *opts
	pingOpts.PoolSize, pingOpts.MinIdleConns, pingOpts.MaxIdleConns = 1, 0, 0
	pingTimeout := max(timeout, minPingTimeout)
	pingOpts.DialTimeout, pingOpts.ReadTimeout, pingOpts.WriteTimeout, pingOpts.PoolTimeout = pingTimeout, pingTimeout, pingTimeout, pingTimeout
	pingOpts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// go-redis has one logger per process, writing plain text to stderr once per failed
	// dial; the Guard reports failures instead, in JSON and at most every 10 s.
	redis.SetLogger(&logging.VoidLogger{})
	return &Redis{client: redis.NewClient(opts), pinger: redis.NewClient(&pingOpts), addr: opts.Addr,
		tls: opts.TLSConfig != nil, timeout: timeout}, nil
}

// Addr is the server's host:port, safe to log (the URL may hold a password).
func (r *Redis) Addr() string { return r.addr }

// TLS reports whether the connections use TLS (rediss://).
func (r *Redis) TLS() bool { return r.tls }

// addScript adds ARGV's deltas to KEYS' counters unless one is at or over its limit:
// ARGV holds n, ttl in milliseconds and limit (0: none) for each key. It returns 1 and the
// values after the additions, or 0 and the values as they stand. PEXPIRE NX sets the
// expiry only on a counter that has none: the window's first Add.
var addScript = redis.NewScript(`
local out, ok = {}, 1
for i = 1, #KEYS do
  out[i + 1] = tonumber(redis.call('GET', KEYS[i]) or '0')
  local limit = tonumber(ARGV[3 * i])
  if limit > 0 and out[i + 1] >= limit then ok = 0 end
end
if ok == 1 then
  for i = 1, #KEYS do
    out[i + 1] = redis.call('INCRBY', KEYS[i], ARGV[3 * i - 2])
    redis.call('PEXPIRE', KEYS[i], ARGV[3 * i - 1], 'NX')
  end
end
out[1] = ok
return out`)

// Add implements Counters with one script, one round trip (EVALSHA; the script is sent
// again only to a Redis that has forgotten it, once): atomic, so a refused Add adds
// nothing and has nothing to take back, and requests meeting at a limit never see each
// other's refused additions.
func (r *Redis) Add(ctx context.Context, deltas ...Delta) ([]int64, bool, error) {
	if len(deltas) == 0 {
		return nil, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	keys := make([]string, len(deltas))
	args := make([]any, 0, 3*len(deltas))
	for i, d := range deltas {
		keys[i] = KeyPrefix + d.Key
		args = append(args, d.N, max(d.TTL.Milliseconds(), 1), max(d.Limit, 0))
	}
	reply, err := addScript.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		return nil, false, err
	}
	if len(reply) != len(deltas)+1 {
		return nil, false, fmt.Errorf("the counters' script answered %d values for %d counters", len(reply), len(deltas))
	}
	return reply[1:], reply[0] == 1, nil
}

// Counts implements Counters with one MGET.
func (r *Redis) Counts(ctx context.Context, keys ...string) ([]int64, error) {
	if len(keys) == 0 {
		return nil, nil // MGET needs a key
	}
	if len(keys) > MaxKeys {
		return nil, errTooManyKeys
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	vals, err := r.client.MGet(ctx, prefixed(keys)...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // nil: no counter
		}
		if out[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, fmt.Errorf("counter %d is not an integer", i)
		}
	}
	return out, nil
}

// Errors of calls refused before they are sent: their replies could not be read back.
var (
	errTooManyKeys  = fmt.Errorf("more than %d keys in one read", MaxKeys)
	errValueTooLong = fmt.Errorf("a value over %d bytes", MaxValueBytes)
)

// Put implements Values. A value over MaxValueBytes is refused: it could not be read back.
func (r *Redis) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if len(value) > MaxValueBytes {
		return errValueTooLong
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.client.Set(ctx, KeyPrefix+key, value, max(ttl, time.Millisecond)).Err()
}

// Get implements Values.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	b, err := r.client.Get(ctx, KeyPrefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// Delete implements Deleter.
func (r *Redis) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.client.Del(ctx, KeyPrefix+key).Err()
}

// GetMany implements Values with one MGET.
func (r *Redis) GetMany(ctx context.Context, keys ...string) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) > MaxKeys {
		return nil, errTooManyKeys
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	vals, err := r.client.MGet(ctx, prefixed(keys)...).Result()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[i] = []byte(s)
		}
	}
	return out, nil
}

// probeKey is the key Ping reads; nothing writes it.
const probeKey = KeyPrefix + "probe"

// minPingTimeout is the least a ping waits. A ping's verdict holds for every request until
// the next one, and it runs in the background, where no request waits for it: a new
// connection's handshake on a busy host, slower than one call may be, must not be taken
// for an outage that skips the store for everyone.
const minPingTimeout = time.Second

// Ping asks the server whether it answers, on a connection of its own, with a read of the
// keyspace (EXISTS) rather than PING: a proxy in front of Redis may answer PING itself
// while the Redis behind it hangs, and the calls would then time out one after another. It
// waits the call timeout, and at least minPingTimeout.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(r.timeout, minPingTimeout)) // the pinger's own timeouts too
	defer cancel()
	return r.pinger.Exists(ctx, probeKey).Err()
}

// Close closes the connections.
func (r *Redis) Close() error { return errors.Join(r.client.Close(), r.pinger.Close()) }

func prefixed(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = KeyPrefix + k
	}
	return out
}
