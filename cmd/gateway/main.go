// Command gateway serves the normalized chat protocol over gRPC and REST and translates it
// to AWS Bedrock Converse. `gateway sim` runs the Bedrock simulator on its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/buildinfo"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

const usage = `gateway: OpenAI-style chat with tools, over gRPC and REST, answered by AWS Bedrock.

Usage:
  gateway [flags]          serve (REST on --http-addr, gRPC on --grpc-addr)
  gateway sim [flags]      run the Bedrock simulator alone (gateway sim --help)
  gateway probe <url>      ask a running gateway whether a model takes tools; exit 0 if so
                           (gateway probe --help)
  gateway usage [flags]    the audit trail's totals by key, model or day, as a table
  gateway replay <request_id> --model <m>
                           re-run a recorded call on another model, both answers side by side
                           (gateway help usage)
  gateway version          print the version (also --version)
  gateway help [sim|probe|usage]
                           print this help, or the simulator's, the probe's or usage's and replay's

`

const simUsage = `gateway sim: a Bedrock Runtime look-alike (Converse and ConverseStream over HTTP), for
tests and demos. Point any Bedrock client at it:
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:4566 AWS_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test gateway

Usage:
  gateway sim [flags]

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command: it returns the exit code (0; 1 when serving failed; 2 for bad
// usage). Help goes to stdout, errors to stderr, each once.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "":
		if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
			fmt.Fprintln(stdout, buildinfo.String())
			return 0
		}
		err = runGateway(ctx, args)
	case "sim":
		err = runSim(ctx, args)
	case "probe":
		return runProbe(ctx, args, stdout, stderr)
	case "usage":
		err = runUsage(ctx, args, stdout)
	case "replay":
		err = runReplay(ctx, args, stdout)
	case "version":
		fmt.Fprintln(stdout, buildinfo.String())
		return 0
	case "help":
		switch {
		case len(args) > 0 && args[0] == "sim":
			printSimUsage(stdout)
		case len(args) > 0 && args[0] == "probe":
			printProbeUsage(stdout)
		case len(args) > 0 && (args[0] == "usage" || args[0] == "replay"):
			printAuditUsage(stdout)
		default:
			printUsage(stdout)
		}
		return 0
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q; run 'gateway --help'\n", cmd)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		printAuditUsage(stdout)
		return 0
	case errors.Is(err, flag.ErrHelp):
		if cmd == "sim" {
			printSimUsage(stdout)
		} else {
			printUsage(stdout)
		}
		return 0
	case errors.As(err, new(usageError)):
		help := "gateway --help"
		switch cmd {
		case "sim":
			help = "gateway sim --help"
		case "usage", "replay":
			help = "gateway help usage"
		}
		fmt.Fprintf(stderr, "gateway: %v\nRun '%s' for usage.\n", err, help)
		return 2
	default:
		fmt.Fprintln(stderr, "gateway:", err)
		return 1
	}
}

// usageError is a mistake on the command line, answered with exit code 2 and a pointer to
// the help.
type usageError struct{ error }

// tryIt is the help's first command: the gateway on the simulator, on loopback only, as
// make run starts it (with no keys, calls need none, so nothing beyond this host may reach
// it).
const tryIt = "gateway --sim --http-addr 127.0.0.1:8080 --grpc-addr 127.0.0.1:9090"

func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	config.PrintFlags(w)
	fmt.Fprintf(w, "\nStart with '%s' (no AWS account needed; loopback only, as make run does), then README.md \"Try it\".\n", tryIt)
}

func printSimUsage(w io.Writer) {
	fmt.Fprint(w, simUsage)
	fs, _ := simFlags()
	printFlags(w, fs)
	fmt.Fprintf(w, "\nFault syntax (--fault, repeatable): %s\n", bedrocksim.FaultHelp)
}

// printFlags writes the flags of a subcommand as gateway --help writes the settings: --name,
// the kind of its value, its default, then what it does.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, help := flag.UnquoteUsage(f)
		if kind != "" {
			kind = " " + kind
		}
		def := f.DefValue
		if def == "" {
			def = "none"
		}
		fmt.Fprintf(w, "  --%s%s  (default %s)\n        %s\n", f.Name, kind, def, help)
	})
}

func runGateway(ctx context.Context, args []string) error {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	log, flush, err := newLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	defer flush()
	g, err := gateway.New(ctx, cfg, log)
	if err != nil {
		if errors.As(err, new(*config.SettingError)) {
			return usageError{err} // a bad value found after config.Load (an AWS setting, a fault spec): exit 2 all the same
		}
		return err
	}
	return g.Serve(ctx)
}

// simOptions are the settings of gateway sim: its address, and the simulator's options,
// which its flags set directly.
type simOptions struct {
	addr string
	sim  bedrocksim.Options
}

func simFlags() (*flag.FlagSet, *simOptions) {
	o := &simOptions{}
	fs := flag.NewFlagSet("gateway sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:4566", "listen address")
	fs.DurationVar(&o.sim.FirstTokenDelay, "first-token-delay", 0, "delay before the first event")
	fs.DurationVar(&o.sim.DeltaDelay, "delta-delay", 0, "delay between stream deltas")
	fs.Func("fault", "inject a `fault`, repeatable, e.g. \"throttle,times=2\" (syntax below)", func(spec string) error {
		f, err := bedrocksim.ParseFault(spec)
		if err == nil {
			o.sim.Faults = append(o.sim.Faults, f)
		}
		return err
	})
	return fs, o
}

// runSim serves the Bedrock simulator alone, so a gateway (or any Bedrock client) can reach
// it through AWS_ENDPOINT_URL_BEDROCK_RUNTIME.
func runSim(ctx context.Context, args []string) error {
	fs, o := simFlags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	sim := bedrocksim.New(o.sim)
	defer sim.Close()
	log, flush, err := newLogger("info", "json")
	if err != nil {
		return err
	}
	defer flush()
	srv := &http.Server{
		Addr:              o.addr,
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
	log.Info("bedrock simulator listening", zap.String("addr", o.addr))
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newLogger logs to stderr in format: "json", one JSON object a line, or "console", zap's
// tab-separated lines for people (time, level, caller, message, then the fields as JSON;
// no colours, which a file or a pipe would show as escapes). A duration field is written
// as a duration string ("20s") in either. Info and debug lines (the access log) are written in
// batches, at most a second late or 256 KiB at a time, rather than one write(2) per request;
// a warning or an error is written at once, with the lines before it, in their order, so a
// crash cannot swallow it. flush writes what is left, and runs on every way out of main. No line carries a stack trace but a
// panic's, which observe adds itself: an error line is an operational failure (Bedrock
// unreachable, no credentials), and the stack of the code that logged it says nothing.
func newLogger(level, format string) (log *zap.Logger, flush func(), err error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, err
	}
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.EncodeDuration = zapcore.StringDurationEncoder
	enc := zapcore.NewJSONEncoder(cfg)
	if format == "console" {
		cfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(cfg)
	}
	// Without os.File's Sync: fsync of a pipe or a terminal fails (EINVAL), and a line
	// written to stderr needs no more than the write.
	stderr := zapcore.Lock(zapcore.AddSync(struct{ io.Writer }{os.Stderr}))
	buffered := &zapcore.BufferedWriteSyncer{WS: stderr, Size: 256 << 10, FlushInterval: time.Second}
	core := zapcore.NewTee(
		zapcore.NewCore(enc, buffered, zap.LevelEnablerFunc(func(l zapcore.Level) bool {
			return l >= lvl && l < zapcore.WarnLevel
		})),
		zapcore.NewCore(enc.Clone(), flushing{buffered}, zap.LevelEnablerFunc(func(l zapcore.Level) bool {
			return l >= lvl && l >= zapcore.WarnLevel
		})),
	)
	log = zap.New(core, zap.AddCaller(), zap.ErrorOutput(stderr))
	return log, func() { _ = buffered.Stop() }, nil
}

// flushing writes a line through the buffer and then flushes it, lines buffered before it
// first: a warning is never written ahead of the info lines that preceded it.
type flushing struct{ *zapcore.BufferedWriteSyncer }

func (f flushing) Write(p []byte) (int, error) {
	n, err := f.BufferedWriteSyncer.Write(p)
	if err != nil {
		return n, err
	}
	return n, f.Sync()
}
