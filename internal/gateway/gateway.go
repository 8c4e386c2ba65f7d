// Package gateway runs the whole gateway process: it resolves the upstream once (AWS, or
// the embedded simulator), then serves gRPC and REST until its context ends.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

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
	"github.com/nirmata/llm-gateway/internal/quota"
	"github.com/nirmata/llm-gateway/internal/reasoning"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/server"
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/telemetry"
)

// Addrs are the addresses the gateway listens on, once it does.
type Addrs struct {
	HTTP, GRPC string
	// Admin is the --admin-addr listener's address; "" without one.
	Admin string
	// Sim is the embedded simulator's base URL when --sim is on.
	Sim string
}

// shutdownTimeout bounds closing the servers once the drain is over: by then every call
// has ended or been cancelled, so this only waits for handlers to return.
const shutdownTimeout = 5 * time.Second

// drain turns the gateway not-ready (/readyz 503, gRPC health NOT_SERVING) while it keeps
// listening, refuses new calls with 503, and waits up to timeout for the calls in flight;
// then cancels what remains.
func drain(svc *core.Service, health interface{ Shutdown() }, timeout time.Duration, cancelCalls context.CancelCauseFunc, log *zap.Logger) {
	log.Info("draining", zap.Duration("timeout", timeout))
	health.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if !svc.Drain(ctx) {
		log.Warn("drain timeout: cancelling the calls still in flight")
	}
	cancelCalls(fault.ErrDraining)
}

// Run serves until ctx ends, then drains and shuts down: see drain. started, if non-nil,
// is called once every listener is open.
func Run(ctx context.Context, cfg config.Config, log *zap.Logger, started func(Addrs)) error {
	return run(ctx, cfg, log, started, runOptions{})
}

// runOptions are what tests give a gateway beside its configuration.
type runOptions struct {
	// now is the clock of the keys' limit windows, which tests move across a window's
	// edge instead of waiting for it; nil is time.Now.
	now func() time.Time
	// counters are the keys' limit counters, which tests read; nil counts in this process.
	counters store.Counters
	// storePingEvery is how often the shared store is pinged; 0 is store.DefaultPingEvery,
	// below 0 never. Tests that count the connections made to a Redis set it beyond their
	// length.
	storePingEvery time.Duration
}

func run(ctx context.Context, cfg config.Config, log *zap.Logger, started func(Addrs), o runOptions) error {
	if o.now == nil {
		o.now = time.Now
	}
	if o.counters == nil {
		o.counters = store.NewMemory(o.now)
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if cfg.APIKeysFile != "" && len(cfg.FileKeys) == 0 {
		// Serving without the file's keys could turn authentication off.
		return errors.New("api_keys_file was not read: build the configuration with config.Load")
	}
	var addrs Addrs
	var awsCfg aws.Config
	if cfg.Sim.Enabled {
		simURL, stopSim, err := startSim(cfg.Sim)
		if err != nil {
			return err
		}
		defer stopSim()
		addrs.Sim = simURL
		awsCfg = SimAWSConfig(simURL)
		log.Warn("serving from the embedded Bedrock simulator, not AWS", zap.String("simulator", simURL))
	} else {
		var err error
		if awsCfg, err = awsconfig.LoadDefaultConfig(ctx); err != nil {
			return fmt.Errorf("load AWS configuration: %w", err)
		}
	}
	m := metrics.New()
	upstream, regions, err := upstreams(ctx, awsCfg, cfg, m, log)
	if err != nil {
		return err
	}
	tracing, err := telemetry.Setup(ctx, buildinfo.Version(), log)
	if err != nil {
		return err
	}
	defer func() {
		// Last: the servers have stopped, so every span has ended.
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := tracing.Shutdown(sctx); err != nil {
			log.Warn("exporting the last spans", zap.Error(err))
		}
	}()
	keyList := slices.Concat(cfg.APIKeys, cfg.FileKeys)
	keyring := make([]auth.Key, 0, len(keyList)+len(cfg.Keys))
	for _, k := range keyList {
		keyring = append(keyring, auth.Key{Key: k})
	}
	for _, k := range cfg.Keys {
		keyring = append(keyring, auth.Key{Name: k.Name, Key: k.Key})
	}
	keys, err := auth.NewKeyring(keyring)
	if err != nil {
		return err
	}
	limits, keyDefaults, err := keyPolicies(cfg.Keys)
	if err != nil {
		return err
	}
	shared, err := sharedStore(cfg.RedisURL, cfg.RedisTimeout, o.storePingEvery, m, log)
	if err != nil {
		return err
	}
	counters := o.counters // nil: in this process
	var values store.Values
	var storeStatus interface{ Status() string }
	if shared != nil {
		defer shared.Close()
		counters, values, storeStatus = shared, shared, shared
	}

	svc := core.New(upstream, core.Options{
		DefaultModel:    cfg.DefaultModel,
		Aliases:         aliasTargets(cfg.ModelAliases),
		Regions:         regions,
		MaxTools:        cfg.MaxTools,
		MaxMessages:     cfg.MaxMessages,
		MaxMessageBytes: cfg.MaxMessageBytes,
		UpstreamTimeout: cfg.UpstreamTimeout,
		MaxConcurrent:   cfg.MaxConcurrent,
		Metrics:         m,

		NoParallelToolCalls: !cfg.ParallelToolCalls,
		ParallelMemoryTTL:   cfg.ParallelMemoryTTL,
		ReasoningCache: reasoning.Options{MaxEntries: cfg.ReasoningCache.MaxEntries,
			MaxBytes: cfg.ReasoningCache.MaxBytes, TTL: cfg.ReasoningCache.TTL},
		Shared: values,
		Quota: quota.New(quota.Options{Keys: limits, Counters: counters, CacheReadWeight: cfg.CacheReadWeight,
			Now: o.now, Metrics: m}),
		StoreTimeout:      cfg.RedisTimeout,
		NoPromptCaching:   cfg.PromptCaching == config.CachingOff,
		AliasDefaults:     aliasDefaults(cfg.AliasDefaults),
		ToolValidation:    string(cfg.ToolValidation),
		MaxRepairAttempts: cfg.MaxRepairAttempts,
		SchemaLimits:      cfg.SchemaLimits,
		Tracing:           tracing,
		Region:            awsCfg.Region,
		KeyDefaults:       keyDefaults,
		Now:               o.now,
		DefaultMaxTokens:  cfg.DefaultMaxTokens,
	}, log)
	// Calls run under base, so those still in flight when the drain times out can be
	// cancelled with a cause: their clients get a 503 instead of a cut connection.
	base, cancelCalls := context.WithCancelCause(context.Background())
	defer cancelCalls(nil)
	obs := observe.New(log, m, tracing)
	grpcServer, health := grpcapi.NewServer(svc, grpcapi.Options{
		Keys: keys, MaxMsgBytes: cfg.MaxBodyBytes, Base: base, StreamWriteTimeout: cfg.StreamWriteTimeout, Observer: obs,
	})
	upstreamName := "bedrock"
	if cfg.Sim.Enabled {
		upstreamName = "bedrock-simulator"
	}
	httpOpts := server.Options{
		Keys:               keys,
		MaxBodyBytes:       int64(cfg.MaxBodyBytes),
		Upstream:           upstreamName,
		Store:              storeStatus,
		StreamWriteTimeout: cfg.StreamWriteTimeout,
		BodyReadTimeout:    cfg.BodyReadTimeout,
		Observer:           obs,
	}
	handler := server.NewHTTPHandler(svc, httpOpts)
	httpServer := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// The request line and headers together; beyond it net/http answers 431 itself,
		// which server.Listener turns into the surface's JSON.
		MaxHeaderBytes: server.MaxHeaderBytes,
		// No WriteTimeout: it would cut long streams. Calls are bounded by upstream_timeout,
		// and a stream whose client stops reading by stream_write_timeout.
		IdleTimeout: 120 * time.Second,
		ErrorLog:    zap.NewStdLog(log),
		BaseContext: func(net.Listener) context.Context { return base },
	}

	grpcLis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("grpc listen: %w", err)
	}
	httpLis, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		grpcLis.Close()
		return fmt.Errorf("http listen: %w", err)
	}
	addrs.HTTP, addrs.GRPC = httpLis.Addr().String(), grpcLis.Addr().String()
	// Probes and the scraper on a second address (docs/PROTOCOL.md 7): short requests, so
	// short timeouts.
	var adminServer *http.Server
	var adminLis net.Listener
	if cfg.AdminAddr != "" {
		if adminLis, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			grpcLis.Close()
			httpLis.Close()
			return fmt.Errorf("admin listen: %w", err)
		}
		addrs.Admin = adminLis.Addr().String()
		adminServer = &http.Server{Handler: server.NewAdminHandler(svc, httpOpts), ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: server.MaxHeaderBytes, ErrorLog: zap.NewStdLog(log)}
	}
	logStarted(log, addrs, upstreamName, keys.Enabled())
	if started != nil {
		started(addrs)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// ErrServerStopped: the shutdown below won the race with Serve; a normal stop.
		if err := grpcServer.Serve(grpcLis); !errors.Is(err, grpc.ErrServerStopped) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		if err := httpServer.Serve(server.Listener(httpLis, obs, m)); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	if adminServer != nil {
		g.Go(func() error {
			if err := adminServer.Serve(adminLis); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		drain(svc, health, cfg.DrainTimeout, cancelCalls, log)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		stopped := make(chan struct{})
		go func() { grpcServer.GracefulStop(); close(stopped) }()
		if err := httpServer.Shutdown(sctx); err != nil {
			log.Warn("closing the connections that did not end", zap.Error(err))
			_ = httpServer.Close()
		}
		if adminServer != nil {
			_ = adminServer.Close() // probes and scrapes: nothing worth waiting for
		}
		select {
		case <-stopped:
		case <-sctx.Done():
			grpcServer.Stop()
		}
		return nil
	})
	return g.Wait()
}

// sharedStore is the Redis at url behind its Guard, or nil without a url. Nothing waits
// for Redis: connections are made by the first calls, and until it answers the gateway
// serves without it (docs/PROTOCOL.md 14.3).
func sharedStore(url string, timeout, pingEvery time.Duration, m *metrics.Metrics, log *zap.Logger) (*store.Guard, error) {
	if url == "" {
		return nil, nil
	}
	r, err := store.NewRedis(url, timeout)
	if err != nil {
		return nil, fmt.Errorf("redis_url: %w", err)
	}
	// The address only: the URL may hold a password.
	log.Info("shared store: limit counters, the reasoning cache and failover affinity are shared with the replicas using this Redis",
		zap.String("store", "redis"), zap.String("addr", r.Addr()), zap.Bool("tls", r.TLS()))
	return store.NewGuard(r, store.GuardOptions{Name: "redis", Metrics: m, Log: log, PingEvery: pingEvery}), nil
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
		return nil, nil, err
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
				return nil, nil, fmt.Errorf("alias %s: region %s: %w", name, t.Region, err)
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
		l := quota.Limits{RequestsPerMinute: k.RequestsPerMinute, TokensPerMinute: k.TokensPerMinute, TokensPerDay: k.TokensPerDay}
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

// startSim serves the simulator on a loopback port: the gateway reaches it over HTTP
// exactly as it reaches AWS.
func startSim(cfg config.Sim) (string, func(), error) {
	opts := bedrocksim.Options{FirstTokenDelay: cfg.FirstTokenDelay, DeltaDelay: cfg.DeltaDelay}
	for _, spec := range cfg.Faults {
		f, err := bedrocksim.ParseFault(spec)
		if err != nil {
			return "", nil, fmt.Errorf("sim_faults: %w", err)
		}
		opts.Faults = append(opts.Faults, f)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("simulator listen: %w", err)
	}
	sim := bedrocksim.New(opts)
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(lis) //nolint:errcheck // Close below ends it
	return "http://" + lis.Addr().String(), func() { sim.Close(); srv.Close() }, nil
}

// SimAWSConfig is an AWS configuration that reaches a simulator at url with fake static
// credentials: requests are signed exactly as for AWS.
func SimAWSConfig(url string) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIMULATOR", "simulator-secret", ""),
		BaseEndpoint: aws.String(url),
	}
}
