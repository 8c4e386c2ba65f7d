// Package gateway is the composition root: New builds the whole gateway process from its
// configuration, and Serve serves gRPC and REST until its context ends, then drains.
// cmd/gateway and the end-to-end suite (e2e) use exactly that pair.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/nirmata/llm-gateway/internal/admin"
	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/buildinfo"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/grpcapi"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/quota"
	"github.com/nirmata/llm-gateway/internal/reasoning"
	"github.com/nirmata/llm-gateway/internal/respstore"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/seal"
	"github.com/nirmata/llm-gateway/internal/server"
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/telemetry"
	"github.com/nirmata/llm-gateway/internal/telemetry/otlp"
)

// Addrs are the addresses the gateway listens on.
type Addrs struct {
	HTTP, GRPC string
	// Admin is the admin_addr listener's address; "" without one.
	Admin string
	// Sim is the embedded simulator's base URL under --sim; "" otherwise.
	Sim string
}

// shutdownTimeout bounds closing the servers once the drain is over: by then every call
// has ended or been cancelled, so this only waits for handlers to return.
const shutdownTimeout = 5 * time.Second

// Gateway is the whole gateway process, built by New and run by Serve.
type Gateway struct {
	cfg   config.Config
	log   *zap.Logger
	addrs Addrs
	// upstream names the upstream on /readyz and in the startup line: "bedrock" or
	// "bedrock-simulator".
	upstream string
	svc      *core.Service
	keys     *auth.Keyring
	// creds tells /readyz whether the gateway has AWS credentials; nil under --sim, which
	// signs with its own.
	creds *credentialsCheck

	grpcServer              *grpc.Server
	health                  interface{ Shutdown() }
	httpServer, adminServer *http.Server // adminServer: nil without admin_addr
	grpcLis, httpLis        net.Listener
	adminLis                net.Listener
	// cancelCalls cancels the calls still in flight when the drain times out, with its
	// cause: their clients get a 503 instead of a cut connection.
	cancelCalls context.CancelCauseFunc

	// release undoes what New set up, in reverse: Serve calls it when it returns, and New
	// when it fails.
	release []func()
	served  atomic.Bool
	// respStore keeps the Responses API's stored responses; sealer seals their reasoning.
	respStore *respstore.Store
	sealer    *seal.Sealer
	// auditStore keeps the audit records; nil when the audit trail is off.
	auditStore audit.Store
}

// Option sets what a program embedding the gateway gives it beside its configuration.
type Option func(*options)

type options struct {
	now      func() time.Time
	counters store.Counters
	aws      *aws.Config
}

// WithClock makes now the clock of the keys' limit windows (docs/PROTOCOL.md 14.2) and of
// the counters kept in the process. It is for programs that embed the gateway and keep
// their own time, and for tests that step across a window's edge instead of waiting for
// it; the default is time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithCounters keeps the keys' limit counters in c rather than in the process when no
// redis_url is set (with one, Redis keeps them). It is for programs that embed the gateway
// with a store of their own, and for tests that read the counters.
func WithCounters(c store.Counters) Option { return func(o *options) { o.counters = c } }

// WithAWSConfig gives the Bedrock clients cfg (region, credentials, endpoint, retryer)
// instead of what the AWS SDK's default configuration chain (the AWS_* variables, the
// shared files) resolves. It is for programs that embed the gateway and resolve AWS
// settings their own way, and for tests that run gateways side by side, each on its own
// upstream; under --sim the simulator's configuration is used.
func WithAWSConfig(cfg aws.Config) Option { return func(o *options) { o.aws = &cfg } }

// New builds the gateway of cfg: the upstream (AWS Bedrock, or the embedded simulator under
// --sim, which it starts), tracing, the keys, the shared store, the core service, and the
// gRPC, REST and admin servers on their listeners, which it opens, so that Addrs holds the
// ports the system chose for ":0". It serves nothing yet: Serve does. For AWS Bedrock it
// looks the AWS credentials up, within a few seconds and without calling Bedrock, and logs
// where it found them, or warns that it found none: then it serves, and /readyz answers
// 503 until some are found. A setting New finds bad (a simulator fault spec, an AWS
// setting such as a missing region, an OpenTelemetry variable) is a *config.SettingError;
// on any error New releases what it built.
func New(ctx context.Context, cfg config.Config, log *zap.Logger, opts ...Option) (_ *Gateway, err error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.counters == nil {
		o.counters = store.NewMemory(o.now)
	}
	g := &Gateway{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			g.close()
		}
	}()

	if err := checkConfig(cfg, log); err != nil {
		return nil, err
	}
	awsCfg, err := g.awsConfig(ctx, o.aws)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	own, regions, err := upstreams(ctx, awsCfg, cfg, m, log)
	if err != nil {
		return nil, err
	}
	if !cfg.Sim.Enabled {
		g.creds = checkCredentials(own, log, o.now)
	}
	tracing, err := g.tracing(ctx)
	if err != nil {
		return nil, err
	}
	if g.keys, err = keyring(cfg); err != nil {
		return nil, err
	}
	shared, err := g.sharedStore(m)
	if err != nil {
		return nil, err
	}

	svcOpts, limits, err := serviceOptions(cfg)
	if err != nil {
		return nil, err
	}
	svcOpts.Region, svcOpts.Regions = awsCfg.Region, regions
	svcOpts.Metrics, svcOpts.Tracing, svcOpts.Now = m, tracing, o.now
	counters := o.counters
	var storeStatus interface{ Status() string } // nil: state is kept in the process
	if shared != nil {
		counters, svcOpts.Shared, storeStatus = shared, shared, shared
	}
	svcOpts.Quota = quota.New(quota.Options{Keys: limits, Counters: counters, CacheReadWeight: cfg.CacheReadWeight,
		Now: o.now, Metrics: m})
	writer, err := g.auditWriter(ctx, m)
	if err != nil {
		return nil, err
	}
	if writer != nil {
		svcOpts.Audit = writer.Level
	}
	g.svc = core.New(own, svcOpts, log)

	if g.sealer, err = g.reasoningSealer(); err != nil {
		return nil, err
	}
	var backend respstore.Backend = respstore.NewMemory(cfg.ResponsesMemoryBytes, o.now)
	if shared != nil {
		backend = shared
	}
	g.respStore = respstore.New(respstore.Options{TTL: cfg.ResponsesTTL, MaxBytes: cfg.ResponsesMaxBytes,
		KeyMaxBytes: int64(cfg.ResponsesKeyMaxBytes), Counters: counters, Backend: backend})

	obs := observe.New(log, m, tracing).WithAudit(writer)
	if err := g.servers(storeStatus, obs); err != nil {
		return nil, err
	}
	if err := g.listen(); err != nil {
		return nil, err
	}
	// What net/http refuses itself before any handler runs is answered in the JSON of
	// the surface the path is under (docs/PROTOCOL.md 5).
	g.httpLis = server.Listener(g.httpLis, obs, m)
	return g, nil
}

// Service is the gateway's core service, for programs that make calls in-process (gateway
// replay).
func (g *Gateway) Service() *core.Service { return g.svc }

// Addrs are the addresses the gateway listens on, known once New has returned.
func (g *Gateway) Addrs() Addrs { return g.addrs }

// Serve serves gRPC, REST and the admin address until ctx ends or a server fails; then it
// drains (see drain), shuts the servers down, and releases everything New built. A
// Gateway serves once; one that is not to serve after all is released by Serve with a
// context already ended.
func (g *Gateway) Serve(ctx context.Context) error {
	if g.served.Swap(true) {
		return errors.New("gateway: Serve called twice")
	}
	defer g.close()
	logStarted(g.log, g.addrs, g.upstream, g.keys.Enabled())
	// The startup lines are written now, not with the next batch of the access log: whoever
	// waits for "gateway listening" (an operator, a supervisor, a test) sees it when it is
	// true.
	_ = g.log.Sync()
	eg, ectx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		// ErrServerStopped: the shutdown below won the race with Serve; a normal stop.
		if err := g.grpcServer.Serve(g.grpcLis); !errors.Is(err, grpc.ErrServerStopped) {
			return err
		}
		return nil
	})
	serveHTTP := func(srv *http.Server, lis net.Listener) func() error {
		return func() error {
			if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
	}
	eg.Go(serveHTTP(g.httpServer, g.httpLis))
	if g.adminServer != nil {
		eg.Go(serveHTTP(g.adminServer, g.adminLis))
	}
	eg.Go(func() error {
		<-ectx.Done()
		g.shutdown()
		return nil
	})
	return eg.Wait()
}

// close releases what New set up, the last first.
func (g *Gateway) close() {
	for _, release := range slices.Backward(g.release) {
		release()
	}
	g.release = nil
}

// checkConfig logs the risky settings the configuration found, and refuses one whose keys
// file config.Load did not read.
func checkConfig(cfg config.Config, log *zap.Logger) error {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if cfg.APIKeysFile != "" && len(cfg.FileKeys) == 0 {
		// Serving without the file's keys could turn authentication off.
		return errors.New("api_keys_file was not read: build the configuration with config.Load")
	}
	return nil
}

// awsConfig is the AWS configuration of the Bedrock clients: given (WithAWSConfig) or else
// the SDK's default chain, or under --sim one that reaches the embedded simulator, which
// it starts. The simulator's settings are parsed either way, so a bad one stops startup
// even without --sim.
func (g *Gateway) awsConfig(ctx context.Context, given *aws.Config) (aws.Config, error) {
	sim, err := simOptions(g.cfg.Sim)
	if err != nil {
		return aws.Config{}, err
	}
	if !g.cfg.Sim.Enabled {
		g.upstream = "bedrock"
		if given != nil {
			return *given, nil
		}
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithLogger(sdkLogger{g.log.WithOptions(zap.WithCaller(false))}))
		if err != nil {
			return aws.Config{}, awsSettingError(err) // a profile that is not there, a bad AWS_MAX_ATTEMPTS
		}
		return awsCfg, nil
	}
	url, stop, err := startSim(sim)
	if err != nil {
		return aws.Config{}, err
	}
	g.release = append(g.release, stop)
	g.upstream, g.addrs.Sim = "bedrock-simulator", url
	g.log.Warn("serving from the embedded Bedrock simulator, not AWS", zap.String("simulator", url))
	return simAWSConfig(url), nil
}

// tracing sets up the export of spans (docs/PROTOCOL.md 14.6); nil when none is configured.
// It is shut down last, once the servers have stopped and every span has ended.
func (g *Gateway) tracing(ctx context.Context) (*telemetry.Tracing, error) {
	tracing, err := otlp.Setup(ctx, buildinfo.Version(), g.log)
	if err != nil {
		// Setup makes no connection: what fails is a variable's value.
		return nil, &config.SettingError{Key: "OpenTelemetry settings", Err: err}
	}
	g.release = append(g.release, func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := tracing.Shutdown(sctx); err != nil {
			g.log.Warn("exporting the last spans", zap.Error(err))
		}
	})
	return tracing, nil
}

// keyring holds every client key of the configuration: api_keys, the keys file's, and the
// named keys.
func keyring(cfg config.Config) (*auth.Keyring, error) {
	keyList := slices.Concat(cfg.APIKeys, cfg.FileKeys)
	keys := make([]auth.Key, 0, len(keyList)+len(cfg.Keys))
	for _, k := range keyList {
		keys = append(keys, auth.Key{Key: k})
	}
	for _, k := range cfg.Keys {
		keys = append(keys, auth.Key{Name: k.Name, Key: k.Key})
	}
	// An admin key is never a client key (docs/PROTOCOL.md 17).
	for i, a := range cfg.AdminKeys {
		ad, _ := auth.Digest(a) // config.Load checked it
		for _, k := range keys {
			if kd, _ := auth.Digest(k.Key); kd == ad {
				return nil, &config.SettingError{Key: "admin_keys", Err: fmt.Errorf("[%d]: also a client key; an admin key must be a key of its own", i)}
			}
		}
	}
	return auth.NewKeyring(keys)
}

// sharedStore is the Redis of redis_url behind its Guard, or nil without one. Nothing
// waits for Redis: connections are made by the first calls, and until it answers the
// gateway serves without it (docs/PROTOCOL.md 14.3).
func (g *Gateway) sharedStore(m *metrics.Metrics) (*store.Guard, error) {
	if g.cfg.RedisURL == "" {
		return nil, nil
	}
	r, err := store.NewRedis(g.cfg.RedisURL, g.cfg.RedisTimeout)
	if err != nil {
		return nil, fmt.Errorf("redis_url: %w", err)
	}
	// The address only: the URL may hold a password.
	g.log.Info("shared store: limit counters, the reasoning cache, failover affinity and stored responses are shared with the replicas using this Redis",
		zap.String("store", "redis"), zap.String("addr", r.Addr()), zap.Bool("tls", r.TLS()))
	pingEvery := g.cfg.RedisPingInterval
	if pingEvery == 0 {
		pingEvery = -1 // never; the Guard's 0 is its default
	}
	guard := store.NewGuard(r, store.GuardOptions{Name: "redis", Metrics: m, Log: g.log, PingEvery: pingEvery})
	g.release = append(g.release, func() { _ = guard.Close() })
	return guard, nil
}

// reasoningSealer seals the reasoning of Responses clients (docs/PROTOCOL.md 16) with the
// configured keys, or with a random key of the process, which it warns of: what it seals
// no restart and no other replica opens.
func (g *Gateway) reasoningSealer() (*seal.Sealer, error) {
	if len(g.cfg.ReasoningSealKeys) == 0 {
		g.log.Warn("reasoning_seal_keys is not set: the reasoning sealed into encrypted_content uses a random key of this process, so a restart or another replica refuses it (400); set reasoning_seal_keys, the same on every replica")
		return seal.Random(), nil
	}
	keys := make([][]byte, len(g.cfg.ReasoningSealKeys))
	for i, text := range g.cfg.ReasoningSealKeys {
		k, err := seal.ParseKey(text)
		if err != nil { // config.Load checked them; a Config built otherwise may not be
			return nil, &config.SettingError{Key: "reasoning_seal_keys", Err: fmt.Errorf("key %d %w", i+1, err)}
		}
		keys[i] = k
	}
	return seal.New(keys...)
}

// serviceOptions are the core service's options the configuration sets, and the keys'
// limits; New adds the parts it built (upstreams, metrics, tracing, store, clock, quota).
func serviceOptions(cfg config.Config) (core.Options, map[string]quota.Limits, error) {
	limits, keyDefaults, err := keyPolicies(cfg.Keys)
	if err != nil {
		return core.Options{}, nil, err
	}
	return core.Options{
		DefaultModel:    cfg.DefaultModel,
		Aliases:         aliasTargets(cfg.ModelAliases),
		MaxTools:        cfg.MaxTools,
		MaxMessages:     cfg.MaxMessages,
		MaxMessageBytes: cfg.MaxMessageBytes,
		UpstreamTimeout: cfg.UpstreamTimeout,
		MaxConcurrent:   cfg.MaxConcurrent,

		NoParallelToolCalls: !cfg.ParallelToolCalls,
		ParallelMemoryTTL:   cfg.ParallelMemoryTTL,
		ReasoningCache: reasoning.Options{MaxEntries: cfg.ReasoningCache.MaxEntries,
			MaxBytes: cfg.ReasoningCache.MaxBytes, TTL: cfg.ReasoningCache.TTL},
		StoreTimeout:      cfg.RedisTimeout,
		NoPromptCaching:   cfg.PromptCaching == config.CachingOff,
		AliasDefaults:     aliasDefaults(cfg.AliasDefaults),
		ToolValidation:    string(cfg.ToolValidation),
		MaxRepairAttempts: cfg.MaxRepairAttempts,
		SchemaLimits:      cfg.SchemaLimits,
		KeyDefaults:       keyDefaults,
		DefaultMaxTokens:  cfg.DefaultMaxTokens,
		Prices:            pricing.New(cfg.Prices),
	}, limits, nil
}

// servers builds the gRPC server, the REST server and, with admin_addr, the admin server
// around the core service. Calls run under a base context that the end of a drain cancels.
func (g *Gateway) servers(storeStatus interface{ Status() string }, obs *observe.Observer) error {
	base, cancelCalls := context.WithCancelCause(context.Background())
	g.cancelCalls = cancelCalls
	g.release = append(g.release, func() { cancelCalls(nil) })
	g.grpcServer, g.health = grpcapi.NewServer(g.svc, grpcapi.Options{
		Keys: g.keys, MaxMsgBytes: g.cfg.MaxBodyBytes, Base: base, StreamWriteTimeout: g.cfg.StreamWriteTimeout, Observer: obs,
	})
	httpOpts := server.Options{
		Keys:               g.keys,
		MaxBodyBytes:       int64(g.cfg.MaxBodyBytes),
		Upstream:           g.upstream,
		Store:              storeStatus,
		StreamWriteTimeout: g.cfg.StreamWriteTimeout,
		BodyReadTimeout:    g.cfg.BodyReadTimeout,
		Observer:           obs,
		ResponseStore:      g.respStore,
		Sealer:             g.sealer,
	}
	if g.creds != nil {
		httpOpts.Credentials = g.creds
	}
	g.httpServer = &http.Server{
		Handler:           server.NewHTTPHandler(g.svc, httpOpts),
		ReadHeaderTimeout: 10 * time.Second,
		// The request line and headers together; beyond it net/http answers 431 itself,
		// which server.Listener turns into the surface's JSON.
		MaxHeaderBytes: server.MaxHeaderBytes,
		// No WriteTimeout: it would cut long streams. Calls are bounded by upstream_timeout,
		// and a stream whose client stops reading by stream_write_timeout.
		IdleTimeout: 120 * time.Second,
		ErrorLog:    zap.NewStdLog(g.log),
		BaseContext: func(net.Listener) context.Context { return base },
	}
	if g.cfg.AdminAddr != "" {
		api, err := admin.Handler(admin.Options{Store: g.auditStore, Keys: g.cfg.AdminKeys})
		if err != nil {
			return &config.SettingError{Key: "admin_keys", Err: err}
		}
		// Probes, the scraper (docs/PROTOCOL.md 7) and the admin API (17): short requests, so
		// short timeouts.
		g.adminServer = &http.Server{Handler: server.NewAdminHandler(g.svc, httpOpts, api), ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: server.MaxHeaderBytes, ErrorLog: zap.NewStdLog(g.log)}
	}
	return nil
}

// auditWriter opens the audit store and starts the writer of the audit records
// (docs/PROTOCOL.md 17); nil, and no store, when neither the audit setting nor any key
// asks for records. The writer is closed, writing what it holds, once the servers have
// stopped.
func (g *Gateway) auditWriter(ctx context.Context, m *metrics.Metrics) (*audit.Writer, error) {
	opts := audit.WriterOptions{MaxContentBytes: g.cfg.AuditMaxContentBytes, Metrics: m, Log: g.log,
		Retention: time.Duration(g.cfg.AuditRetentionDays) * 24 * time.Hour}
	var err error
	if opts.Level, err = audit.ParseLevel(g.cfg.Audit); err != nil {
		return nil, &config.SettingError{Key: "audit", Err: err}
	}
	on := opts.Level != audit.Off
	for _, k := range g.cfg.Keys {
		if k.Audit == "" {
			continue
		}
		level, err := audit.ParseLevel(k.Audit)
		if err != nil {
			return nil, &config.SettingError{Key: "keys", Err: err}
		}
		d, _ := auth.Digest(k.Key) // config.Load checked it
		if opts.Keys == nil {
			opts.Keys = map[string]audit.Level{}
		}
		opts.Keys[auth.ID(k.Name, d)] = level
		on = on || level != audit.Off
	}
	if !on {
		return nil, nil
	}
	if opts.Store, err = audit.Open(ctx, g.cfg.AuditDSN); err != nil {
		return nil, &config.SettingError{Key: "audit_dsn", Err: err}
	}
	g.auditStore = opts.Store
	w := audit.NewWriter(opts)
	g.release = append(g.release, func() {
		ctx, cancel := context.WithTimeout(context.Background(), auditFlushTimeout)
		defer cancel()
		w.Close(ctx)
		_ = opts.Store.Close()
	})
	return w, nil
}

// auditFlushTimeout bounds the writing of the audit records still queued when the gateway
// stops.
const auditFlushTimeout = 5 * time.Second

// listen opens the gRPC, REST and admin listeners: from here on their ports are taken,
// and Addrs says which they are.
func (g *Gateway) listen() error {
	open := func(what, addr string) (net.Listener, error) {
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("%s listen: %w", what, err)
		}
		g.release = append(g.release, func() { _ = lis.Close() }) // a server's Serve closes it too
		return lis, nil
	}
	var err error
	if g.grpcLis, err = open("grpc", g.cfg.GRPCAddr); err != nil {
		return err
	}
	if g.httpLis, err = open("http", g.cfg.HTTPAddr); err != nil {
		return err
	}
	g.addrs.HTTP, g.addrs.GRPC = g.httpLis.Addr().String(), g.grpcLis.Addr().String()
	if g.adminServer != nil {
		if g.adminLis, err = open("admin", g.cfg.AdminAddr); err != nil {
			return err
		}
		g.addrs.Admin = g.adminLis.Addr().String()
	}
	return nil
}

// shutdown drains, then closes the servers: the REST one gracefully, the admin one at once
// (probes and scrapes: nothing worth waiting for), the gRPC one gracefully within
// shutdownTimeout.
func (g *Gateway) shutdown() {
	g.drain()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	stopped := make(chan struct{})
	go func() { g.grpcServer.GracefulStop(); close(stopped) }()
	if err := g.httpServer.Shutdown(sctx); err != nil {
		g.log.Warn("closing the connections that did not end", zap.Error(err))
		_ = g.httpServer.Close()
	}
	if g.adminServer != nil {
		_ = g.adminServer.Close()
	}
	select {
	case <-stopped:
	case <-sctx.Done():
		g.grpcServer.Stop()
	}
}

// drain turns the gateway not-ready (/readyz 503, gRPC health NOT_SERVING) while it keeps
// listening, refuses new calls with 503, and waits up to drain_timeout for the calls in
// flight; then cancels what remains.
func (g *Gateway) drain() {
	g.log.Info("draining", zap.Duration("timeout", g.cfg.DrainTimeout))
	g.health.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.DrainTimeout)
	defer cancel()
	if !g.svc.Drain(ctx) {
		g.log.Warn("drain timeout: cancelling the calls still in flight")
	}
	g.cancelCalls(fault.ErrDraining)
}

// upstreams builds the Bedrock client of the gateway's own region, and one for every other
// region an alias target names (docs/PROTOCOL.md 14.1), each from the same AWS
// configuration with only its region changed: the credentials are resolved once and
// shared, as is the transport. Under --sim every region's client goes to the one
// simulator, and signs for its own region, which the simulator reads (section 9).
func upstreams(ctx context.Context, awsCfg aws.Config, cfg config.Config, m *metrics.Metrics, log *zap.Logger) (*bedrock.Client, map[string]route.Upstream, error) {
	opts := bedrock.ClientOptions{
		Transport: bedrock.NewTransport(),
		SigV4Only: cfg.Sim.Enabled,
		OnRetry:   func(model string, _ error) { m.Retry(model) },
	}
	own, err := bedrock.NewClient(ctx, awsCfg, opts)
	if err != nil {
		return nil, nil, awsSettingError(err)
	}
	log.Info("bedrock upstream", zap.String("endpoint", own.Endpoint()), zap.String("region", awsCfg.Region))
	regions := map[string]route.Upstream{}
	for _, name := range slices.Sorted(maps.Keys(cfg.ModelAliases)) {
		for _, t := range cfg.ModelAliases[name] {
			if _, done := regions[t.Region]; t.Region == "" || done {
				continue
			}
			if t.Region == awsCfg.Region {
				regions[t.Region] = own
				continue
			}
			regional := awsCfg.Copy()
			regional.Region = t.Region
			c, err := bedrock.NewClient(ctx, regional, opts)
			if err != nil {
				return nil, nil, &config.SettingError{Key: "model_aliases", Err: fmt.Errorf("%s: region %s: %w", name, t.Region, err)}
			}
			regions[t.Region] = c
			if c.Endpoint() == own.Endpoint() && !cfg.Sim.Enabled {
				// A custom endpoint (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, a VPC endpoint) belongs
				// to one region: the other region's calls reach it signed for their own.
				log.Warn("a custom Bedrock endpoint is set and a target names another region: that region's calls go to the same endpoint",
					zap.String("alias", name), zap.String("region", t.Region), zap.String("endpoint", c.Endpoint()))
			}
			log.Info("bedrock upstream", zap.String("endpoint", c.Endpoint()), zap.String("region", t.Region))
		}
	}
	return own, regions, nil
}

// awsSettingError is err, a bad AWS setting the SDK or the Bedrock client found (no region,
// a profile that is not there, an endpoint with a query), as the setting error it is.
func awsSettingError(err error) error {
	return &config.SettingError{Key: "AWS settings", Err: err}
}

// aliasTargets are the configured aliases' targets as the core takes them.
func aliasTargets(in map[string][]config.Target) map[string][]route.Target {
	out := make(map[string][]route.Target, len(in))
	for name, targets := range in {
		for _, t := range targets {
			out[name] = append(out[name], route.Target{ModelID: t.ModelID, Region: t.Region})
		}
	}
	return out
}

// aliasDefaults are the configured alias defaults as the core takes them.
func aliasDefaults(in map[string]config.AliasDefaults) map[string]core.AliasDefaults {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]core.AliasDefaults, len(in))
	for name, d := range in {
		c := core.AliasDefaults{Defaults: coreDefaults(d.Defaults)}
		if d.PromptCaching != "" {
			c.PromptCaching = new(d.PromptCaching == config.CachingAuto)
		}
		out[name] = c
	}
	return out
}

// coreDefaults are a key's or an alias's defaults as the core takes them.
func coreDefaults(d config.Defaults) core.Defaults {
	c := core.Defaults{ParallelToolCalls: d.ParallelToolCalls, ReasoningEffort: d.ReasoningEffort, ToolValidation: string(d.ToolValidation)}
	if d.MaxToolRounds != nil {
		c.MaxToolRounds = new(int32(*d.MaxToolRounds))
	}
	return c
}

// keyPolicies are the limits and the defaults of the configured keys, by the identity
// their calls go by; nil maps when no key has any. A key with neither is in neither map:
// no lookup finds it, no store call is made.
func keyPolicies(keys []config.Key) (map[string]quota.Limits, map[string]core.Defaults, error) {
	var limits map[string]quota.Limits
	var defaults map[string]core.Defaults
	for _, k := range keys {
		l := quota.Limits{RequestsPerMinute: k.RequestsPerMinute, TokensPerMinute: k.TokensPerMinute, TokensPerDay: k.TokensPerDay,
			MicroUSDPerDay: microUSD(k.USDPerDay), MicroUSDPerMonth: microUSD(k.USDPerMonth)}
		d := coreDefaults(k.Defaults)
		if l == (quota.Limits{}) && d == (core.Defaults{}) {
			continue
		}
		digest, err := auth.Digest(k.Key)
		if err != nil {
			return nil, nil, err // the configuration checked it
		}
		id := auth.ID(k.Name, digest)
		if l != (quota.Limits{}) {
			if limits == nil {
				limits = map[string]quota.Limits{}
			}
			limits[id] = l
		}
		if d != (core.Defaults{}) {
			if defaults == nil {
				defaults = map[string]core.Defaults{}
			}
			defaults[id] = d
		}
	}
	return limits, defaults, nil
}

// microUSD is a dollar limit in the micro-dollars the quota counts; the configuration
// bounds it.
func microUSD(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// logStarted says where the gateway listens, which of its addresses reach beyond this host,
// whether calls need a key, and what to try first; and warns when anyone who can reach
// those addresses may call it, or read its /metrics.
func logStarted(log *zap.Logger, addrs Addrs, upstream string, auth bool) {
	tryAuth := ""
	if auth {
		tryAuth = " -H 'Authorization: Bearer <key>'"
	}
	admin := zap.Skip()
	if addrs.Admin != "" {
		admin = zap.String("admin", addrs.Admin)
	}
	open := beyondLoopback(addrs)
	log.Info("gateway listening",
		zap.String("http", addrs.HTTP), zap.String("grpc", addrs.GRPC), admin, zap.String("upstream", upstream),
		zap.Strings("beyond_loopback", open), zap.Bool("keys_required", auth),
		zap.String("try", "curl -s http://"+dialable(addrs.HTTP)+"/llm-apps/chat"+tryAuth+` -d '{"messages":[{"role":"user","content":"What can you do?"}]}'`+
			"; OpenAI SDKs: base URL http://"+dialable(addrs.HTTP)+"/v1"+
			"; grpcurl -plaintext "+dialable(addrs.GRPC)+" list; README.md \"Try it\" has more"))
	if auth {
		return
	}
	where := "on loopback only"
	if len(open) > 0 {
		var risks []string
		if !loopback(addrs.HTTP) || !loopback(addrs.GRPC) {
			risks = append(risks, "anyone who can reach this host can use its AWS credentials")
		}
		if addrs.Admin != "" && !loopback(addrs.Admin) {
			risks = append(risks, "/metrics on the admin address, open without a key, lists key names and model names to anyone who reaches it")
		}
		where = "BEYOND LOOPBACK (" + strings.Join(open, ", ") + "): " + strings.Join(risks, "; ")
	}
	log.Warn("authentication is off: no API keys configured; set GATEWAY_API_KEYS (or --api-keys-file, or keys in the --config file) to require them",
		zap.String("http", addrs.HTTP), zap.String("grpc", addrs.GRPC), admin, zap.String("listening", where))
}

// beyondLoopback names each listener whose address is not loopback, as "http [::]:8080".
func beyondLoopback(addrs Addrs) []string {
	open := []string{}
	for _, l := range []struct{ name, addr string }{{"http", addrs.HTTP}, {"grpc", addrs.GRPC}, {"admin", addrs.Admin}} {
		if l.addr != "" && !loopback(l.addr) {
			open = append(open, l.name+" "+l.addr)
		}
	}
	return open
}

// dialable turns a listen address such as "[::]:8080" into one a client on this host can
// dial.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// loopback reports whether a listen address accepts connections from this host only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// simOptions are the simulator's options of the sim_* settings: bedrocksim parses the
// fault specs, and a bad one is a bad sim_faults.
func simOptions(cfg config.Sim) (bedrocksim.Options, error) {
	opts := bedrocksim.Options{FirstTokenDelay: cfg.FirstTokenDelay, DeltaDelay: cfg.DeltaDelay}
	for i, spec := range cfg.Faults {
		f, err := bedrocksim.ParseFault(spec)
		if err != nil {
			return bedrocksim.Options{}, &config.SettingError{Key: "sim_faults", Err: fmt.Errorf("[%d]: %w", i, err)}
		}
		opts.Faults = append(opts.Faults, f)
	}
	return opts, nil
}

// startSim serves the simulator on a loopback port: the gateway reaches it over HTTP
// exactly as it reaches AWS.
func startSim(opts bedrocksim.Options) (url string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator listen: %w", err)
	}
	sim := bedrocksim.New(opts)
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(lis) //nolint:errcheck // Close below ends it
	return "http://" + lis.Addr().String(), func() { sim.Close(); srv.Close() }, nil
}

// simAWSConfig is an AWS configuration that reaches a simulator at url with fake static
// credentials: requests are signed exactly as for AWS.
func simAWSConfig(url string) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIMULATOR", "simulator-secret", ""),
		BaseEndpoint: aws.String(url),
	}
}
