package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/loadtest"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
	"github.com/nirmata/llm-gateway/internal/reasoning"
)

// BenchmarkHandler is the gateway's own work for one request of each load-test scenario
// (make bench-e2e's bodies, on both REST surfaces), in one process and without sockets:
// the REST handler with the default configuration, auth on and a JSON access log, calling
// a Bedrock client that signs and sends through a transport which replays the
// simulator's answer to that request. What it leaves out is what any proxy pays too
// (net/http's connection handling on both sides, system calls), so its allocations and
// time are the gateway's own, and reproducible: -benchmem's allocs/op is the number the
// hot-path work is measured by.
func BenchmarkHandler(b *testing.B) {
	for _, name := range []string{"unary", "openai-unary", "stream", "openai-stream"} {
		b.Run(name, func(b *testing.B) {
			h, req := benchGateway(b, name)
			w := &discardWriter{header: http.Header{}}
			serve := func() {
				clear(w.header)
				w.status = 0
				r := req.Request
				r.Body = io.NopCloser(bytes.NewReader(req.body))
				h.ServeHTTP(w, &r)
				if w.status != http.StatusOK {
					b.Fatalf("%s: status %d", name, w.status)
				}
			}
			serve() // the simulator's answer is recorded; schemas are cached as in a running gateway
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				serve()
			}
			b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the CPU time the process has used, all its threads (the collector's too):
// unlike ns/op, it does not count the time other processes on the host take the CPU from
// this one.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRequest is a scenario's request, its body apart so each call reads it anew.
type benchRequest struct {
	http.Request
	body []byte
}

// benchGateway is the REST handler on the defaults of config.Load, its Bedrock client
// answered by a replayingTransport, and the scenario's request with a valid key.
func benchGateway(b *testing.B, scenario string) (http.Handler, *benchRequest) {
	b.Helper()
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	sim := bedrocksim.New(bedrocksim.Options{})
	b.Cleanup(sim.Close)
	client, err := bedrock.NewClient(b.Context(), aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDBENCH", "bench-secret", ""),
		BaseEndpoint: aws.String("http://bedrock.invalid"),
	}, bedrock.ClientOptions{Transport: &replayingTransport{sim: sim, answers: map[string]recorded{}}, SigV4Only: true})
	if err != nil {
		b.Fatal(err)
	}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.InfoLevel))
	svc := core.New(client, core.Options{
		DefaultModel:        cfg.DefaultModel,
		MaxTools:            cfg.MaxTools,
		MaxMessages:         cfg.MaxMessages,
		MaxMessageBytes:     cfg.MaxMessageBytes,
		UpstreamTimeout:     cfg.UpstreamTimeout,
		MaxConcurrent:       cfg.MaxConcurrent,
		Metrics:             metrics.New(),
		NoParallelToolCalls: !cfg.ParallelToolCalls,
		ReasoningCache: reasoning.Options{MaxEntries: cfg.ReasoningCache.MaxEntries,
			MaxBytes: cfg.ReasoningCache.MaxBytes, TTL: cfg.ReasoningCache.TTL},
		StoreTimeout:      cfg.RedisTimeout,
		NoPromptCaching:   cfg.PromptCaching == config.CachingOff,
		ToolValidation:    string(cfg.ToolValidation),
		MaxRepairAttempts: cfg.MaxRepairAttempts,
		SchemaLimits:      cfg.SchemaLimits,
		Region:            "us-east-1",
		DefaultMaxTokens:  cfg.DefaultMaxTokens,
	}, log)
	const key = "bench-key-0123456789"
	keys, err := auth.NewKeyring([]auth.Key{{Key: key}})
	if err != nil {
		b.Fatal(err)
	}
	h := NewHTTPHandler(svc, Options{Keys: keys, MaxBodyBytes: int64(cfg.MaxBodyBytes), Upstream: "bedrock",
		StreamWriteTimeout: cfg.StreamWriteTimeout, BodyReadTimeout: cfg.BodyReadTimeout, Observer: observe.New(log, svc.Metrics(), nil)})
	sc, err := loadtest.Lookup(scenario, loadtest.DefaultModel)
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequestWithContext(b.Context(), http.MethodPost, sc.Path, nil)
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = int64(len(sc.Body))
	return h, &benchRequest{Request: *r, body: sc.Body}
}

// replayingTransport answers each operation (Converse, ConverseStream) with what the
// simulator answered its first call: the simulator's own work is left out of the measure.
// A benchmark sends one request over and over, so the answer fits every call. It reads
// the request's body as a transport writes it, and reports it written. Not safe for
// concurrent use.
type replayingTransport struct {
	sim     http.Handler
	answers map[string]recorded // by path
	buf     bytes.Buffer
}

type recorded struct {
	header http.Header
	body   []byte
}

func (t *replayingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.buf.Reset()
	if _, err := t.buf.ReadFrom(req.Body); err != nil {
		return nil, err
	}
	if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	a, ok := t.answers[req.URL.Path]
	if !ok {
		rec := httptest.NewRecorder()
		sreq := httptest.NewRequestWithContext(context.Background(), req.Method, req.URL.String(), bytes.NewReader(t.buf.Bytes()))
		sreq.Header = req.Header.Clone()
		t.sim.ServeHTTP(rec, sreq)
		if rec.Code != http.StatusOK {
			return nil, &bedrock.APIError{Code: "bench", Message: rec.Body.String(), StatusCode: rec.Code}
		}
		a = recorded{header: rec.Result().Header, body: rec.Body.Bytes()}
		a.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
		t.answers[req.URL.Path] = a
	}
	return &http.Response{StatusCode: http.StatusOK, Header: a.header, ContentLength: int64(len(a.body)),
		Body: io.NopCloser(bytes.NewReader(a.body)), Request: req}, nil
}

// discardWriter is a ResponseWriter that keeps the status and drops the body; it flushes
// (to nothing), as a stream needs, and takes deadlines as a connection's writer does (one
// that did not would cost every call an error of http.ResponseController's, counted as
// the gateway's allocations).
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (w *discardWriter) Flush() {}

func (w *discardWriter) SetReadDeadline(time.Time) error { return nil }

func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }
