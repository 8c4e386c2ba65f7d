// Package gateway runs the whole gateway process: it resolves the upstream once (AWS, or
// the embedded simulator), then serves gRPC and REST until its context ends.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/server"
)

// Addrs are the addresses the gateway listens on, once it does.
type Addrs struct {
	HTTP, GRPC string
	// Sim is the embedded simulator's base URL when --sim is on.
	Sim string
}

// shutdownTimeout bounds how long in-flight calls may finish after the context ends.
const shutdownTimeout = 10 * time.Second

// Run serves until ctx ends, then shuts down gracefully. started, if non-nil, is called
// once every listener is open.
func Run(ctx context.Context, cfg config.Config, log *zap.Logger, started func(Addrs)) error {
	var addrs Addrs
	var awsCfg aws.Config
	if cfg.Sim {
		simURL, stopSim, err := startSim(cfg)
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
	upstream, err := bedrock.NewClient(ctx, awsCfg, bedrock.ClientOptions{SigV4Only: cfg.Sim})
	if err != nil {
		return err
	}
	log.Info("bedrock upstream", zap.String("endpoint", upstream.Endpoint()), zap.String("region", awsCfg.Region))
	if len(cfg.APIKeys) == 0 {
		log.Warn("no API keys configured: authentication is off (set GATEWAY_API_KEYS)")
	}

	svc := server.NewService(upstream, server.Options{
		DefaultModel: cfg.DefaultModel,
		Aliases:      cfg.ModelAliases,
		MaxTools:     cfg.MaxTools,
		Simulated:    cfg.Sim,
	}, log)
	grpcServer, health := server.NewGRPCServer(svc, cfg.APIKeys, int(cfg.MaxBodyBytes), log)
	var draining atomic.Bool
	upstreamName := "bedrock"
	if cfg.Sim {
		upstreamName = "bedrock-simulator"
	}
	handler, err := server.NewHTTPHandler(ctx, svc, server.HTTPOptions{
		APIKeys:      cfg.APIKeys,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Upstream:     upstreamName,
		Ready: func() string {
			if draining.Load() {
				return "draining"
			}
			return ""
		},
	}, log)
	if err != nil {
		return err
	}
	httpServer := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          zap.NewStdLog(log),
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
	log.Info("gateway listening", zap.String("http", addrs.HTTP), zap.String("grpc", addrs.GRPC))
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
		if err := httpServer.Serve(httpLis); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		draining.Store(true)
		health.Shutdown()
		log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		stopped := make(chan struct{})
		go func() { grpcServer.GracefulStop(); close(stopped) }()
		err := httpServer.Shutdown(sctx)
		select {
		case <-stopped:
		case <-sctx.Done():
			grpcServer.Stop()
		}
		return err
	})
	return g.Wait()
}

// startSim serves the simulator on a loopback port: the gateway reaches it over HTTP
// exactly as it reaches AWS.
func startSim(cfg config.Config) (string, func(), error) {
	opts := bedrocksim.Options{
		FirstTokenDelay: time.Duration(cfg.SimFirstTokenDelay),
		DeltaDelay:      time.Duration(cfg.SimDeltaDelay),
	}
	for _, spec := range cfg.SimFaults {
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
