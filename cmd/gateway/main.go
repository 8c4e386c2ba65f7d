// Command gateway serves the normalized chat protocol over gRPC and REST and translates it
// to AWS Bedrock Converse. `gateway sim` runs the Bedrock simulator on its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "sim" {
		err = runSim(ctx, os.Args[2:])
	} else {
		err = runGateway(ctx, os.Args[1:])
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func runGateway(ctx context.Context, args []string) error {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	log, flush, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer flush()
	return gateway.Run(ctx, cfg, log, nil)
}

// runSim serves the Bedrock simulator alone, so a gateway (or any Bedrock client) can reach
// it through AWS_ENDPOINT_URL_BEDROCK_RUNTIME.
func runSim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway sim", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4566", "listen address")
	firstToken := fs.Duration("first-token-delay", 0, "delay before the first event")
	delta := fs.Duration("delta-delay", 0, "delay between stream deltas")
	opts := bedrocksim.Options{}
	fs.Func("fault", `inject a fault, repeatable: "throttle,times=2", "stream_exception,exception=modelStreamErrorException,after=5", "truncate", "hang,mode=unary"`, func(spec string) error {
		f, err := bedrocksim.ParseFault(spec)
		if err == nil {
			opts.Faults = append(opts.Faults, f)
		}
		return err
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts.FirstTokenDelay, opts.DeltaDelay = *firstToken, *delta
	sim := bedrocksim.New(opts)
	defer sim.Close()
	log, flush, err := newLogger("info")
	if err != nil {
		return err
	}
	defer flush()
	srv := &http.Server{
		Addr:              *addr,
		Handler:           sim,
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		sim.Close() // release requests held by a hang fault
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("bedrock simulator listening", zap.String("addr", *addr))
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newLogger logs JSON to stderr. Info and debug lines (the access log) are written in
// batches, at most a second late or 256 KiB at a time, rather than one write(2) per request;
// warnings and errors are written at once, so a crash cannot swallow them. flush writes
// what is left, and runs on every way out of main.
func newLogger(level string) (log *zap.Logger, flush func(), err error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	stderr := zapcore.Lock(os.Stderr)
	buffered := &zapcore.BufferedWriteSyncer{WS: stderr, Size: 256 << 10, FlushInterval: time.Second}
	core := zapcore.NewTee(
		zapcore.NewCore(zapcore.NewJSONEncoder(enc), buffered, zap.LevelEnablerFunc(func(l zapcore.Level) bool {
			return l >= lvl && l < zapcore.WarnLevel
		})),
		zapcore.NewCore(zapcore.NewJSONEncoder(enc), stderr, zap.LevelEnablerFunc(func(l zapcore.Level) bool {
			return l >= lvl && l >= zapcore.WarnLevel
		})),
	)
	log = zap.New(core, zap.AddCaller(), zap.ErrorOutput(stderr), zap.AddStacktrace(zapcore.ErrorLevel))
	return log, func() { _ = buffered.Stop() }, nil
}
