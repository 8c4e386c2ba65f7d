// Command loadgen is an HTTP load generator for the gateway and its baseline proxy:
// -concurrency workers each send the next request as soon as the previous answer was read to
// its end (closed loop), or, with -rate, requests start on a fixed schedule (open loop), for
// -n requests or for -duration. Streams are read line by line (or frame by frame for Bedrock
// event streams); one without its final done line is an error. OpenAI answers (the openai-*
// scenarios) are decoded and checked for OpenAI's shape: a unary chat.completion with its
// choice, finish reason and usage; a stream of chat.completion.chunk events ending with
// [DONE], with a finish reason and no error event.
//
// With -pid it also samples that process (the server under test): CPU time from
// /proc/PID/stat over the run gives CPU µs per request, and RSS from /proc/PID/status is
// sampled every -sample-every. With -metrics-url it reads go_memstats_mallocs_total before
// and after, for allocations per request.
//
//	loadgen -url http://127.0.0.1:8080 -scenario stream -concurrency 16 -n 5000 -pid 1234 -json
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/loadtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed, err := run(ctx, os.Args[1:], os.Stdout)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
		}
		os.Exit(2)
	}
	if failed {
		os.Exit(1) // the summary was printed; a run with errors is a failed run
	}
}

type options struct {
	url, scenario, bodyFile, format, model, metricsURL string
	headers                                            http.Header
	concurrency, n, warmup, pid                        int
	rate                                               float64
	duration, timeout, sampleEvery                     time.Duration
	rssLog, rssOpen, asJSON                            bool
}

func parseFlags(args []string) (options, error) {
	o := options{headers: http.Header{}}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "target; a URL with no path gets the scenario's path")
	fs.StringVar(&o.scenario, "scenario", "unary", "request to repeat: "+strings.Join(loadtest.Scenarios, ", "))
	fs.StringVar(&o.bodyFile, "body-file", "", "send this file's bytes instead of the scenario's body")
	fs.StringVar(&o.format, "format", "", "how to read answers: unary, jsonl, eventstream, sse, anthropic-sse, openai (default: the scenario's)")
	fs.StringVar(&o.model, "model", loadtest.DefaultModel, "model the scenario asks for")
	fs.IntVar(&o.concurrency, "concurrency", 4, "requests in flight")
	fs.IntVar(&o.n, "n", 0, "total requests (or use -duration)")
	fs.DurationVar(&o.duration, "duration", 0, "run this long when -n is 0")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: start this many requests per second on a fixed schedule (latency counts from each one's slot); needs -concurrency above rate × latency")
	fs.IntVar(&o.warmup, "warmup", 0, "requests sent first and not counted (warms connections, pools and the target's code paths)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "per-request limit; a request past it is an error")
	fs.Func("header", `request header, repeatable: "Authorization: Bearer k"`, func(s string) error {
		name, value, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("header %q: want \"Name: value\"", s)
		}
		o.headers.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		return nil
	})
	fs.IntVar(&o.pid, "pid", 0, "process to measure: CPU per request and RSS")
	fs.DurationVar(&o.sampleEvery, "sample-every", time.Second, "RSS sampling interval (with -pid)")
	fs.BoolVar(&o.rssLog, "rss-log", false, "print each RSS sample to stderr as it is taken")
	fs.BoolVar(&o.rssOpen, "rss-open", false, "memory run: report the highest RSS seen while all -concurrency streams were open, and KiB per open stream over the start RSS (with -pid)")
	fs.StringVar(&o.metricsURL, "metrics-url", "", "Prometheus page of the target, for allocations per request (go_memstats_mallocs_total)")
	fs.BoolVar(&o.asJSON, "json", false, "print the summary as JSON")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if (o.n > 0) == (o.duration > 0) {
		return o, errors.New("give one of -n and -duration")
	}
	if o.concurrency < 1 {
		return o, errors.New("-concurrency must be at least 1")
	}
	if o.rate < 0 {
		return o, errors.New("-rate must not be negative")
	}
	return o, nil
}

// target builds the request config from the scenario and the overriding flags.
func target(o options) (loadtest.Config, string, error) {
	sc, err := loadtest.Lookup(o.scenario, o.model)
	if err != nil {
		return loadtest.Config{}, "", err
	}
	u, err := url.Parse(o.url)
	if err != nil {
		return loadtest.Config{}, "", err
	}
	full := o.url
	if u.Path == "" || u.Path == "/" {
		full = strings.TrimSuffix(o.url, "/") + sc.Path
	}
	cfg := loadtest.Config{URL: full, Body: sc.Body, Header: o.headers, Format: sc.Format, Expect: sc.Expect, Usage: sc.Usage}
	if o.bodyFile != "" {
		if cfg.Body, err = os.ReadFile(o.bodyFile); err != nil {
			return cfg, "", err
		}
		cfg.Expect, cfg.Usage = nil, false // the scenario's expectations are about the scenario's body
	}
	if o.format != "" {
		cfg.Format = loadtest.Format(o.format)
		if !slices.Contains(loadtest.Formats, cfg.Format) {
			return cfg, "", fmt.Errorf("unknown -format %q", o.format)
		}
	}
	return cfg, full, nil
}

// summary is the machine-readable report (-json). Pointers are null when not measured.
type summary struct {
	Scenario       string         `json:"scenario"`
	URL            string         `json:"url"`
	Concurrency    int            `json:"concurrency"`
	Rate           float64        `json:"rate,omitzero"`
	Requests       int            `json:"requests"`
	OK             int            `json:"ok"`
	Errors         int            `json:"errors"`
	ErrorsByKind   map[string]int `json:"errors_by_kind"`
	Statuses       map[int]int    `json:"statuses,omitempty"`
	ElapsedS       float64        `json:"elapsed_s"`
	ReqPerS        float64        `json:"req_per_s"`
	P50Ms          float64        `json:"p50_ms"`
	P90Ms          float64        `json:"p90_ms"`
	P99Ms          float64        `json:"p99_ms"`
	MaxMs          float64        `json:"max_ms"`
	FirstLineP50Ms *float64       `json:"first_line_p50_ms"`
	LinesPerStream *float64       `json:"lines_per_stream"`
	PID            int            `json:"pid,omitzero"`
	CPUUsPerReq    *float64       `json:"cpu_us_per_req"`
	RSSStartKiB    *int64         `json:"rss_start_kib"`
	RSSPeakKiB     *int64         `json:"rss_peak_kib"`
	RSSEndKiB      *int64         `json:"rss_end_kib"`
	RSSSamples     []rssSample    `json:"rss_samples,omitempty"`
	RSSOpenKiB     *int64         `json:"rss_open_kib"`
	OpenStreams    *int64         `json:"open_streams"`
	KiBPerOpen     *float64       `json:"kib_per_open_stream"`
	AllocsPerReq   *float64       `json:"allocs_per_req"`
	AllocsNote     string         `json:"allocs_note,omitempty"`
}

type rssSample struct {
	TS  float64 `json:"t_s"` // seconds since the measured run started
	KiB int64   `json:"kib"`
}

func run(ctx context.Context, args []string, out io.Writer) (failed bool, err error) {
	o, err := parseFlags(args)
	if err != nil {
		return false, err
	}
	cfg, full, err := target(o)
	if err != nil {
		return false, err
	}
	cfg.Client = loadtest.NewClient(o.concurrency, o.timeout)
	cfg.Concurrency = o.concurrency
	defer cfg.Client.CloseIdleConnections()

	if o.warmup > 0 {
		w := cfg
		w.Requests, w.Duration = o.warmup, 0
		if res := loadtest.NewRunner(w).Run(ctx); res.Errors() > 0 {
			return true, fmt.Errorf("warm-up: %d of %d requests failed (%s)", res.Errors(), res.Requests(), errorsText(byKind(res), res.Statuses))
		}
	}

	s := summary{Scenario: o.scenario, URL: full, Concurrency: o.concurrency, Rate: o.rate, PID: o.pid}
	if o.bodyFile != "" {
		s.Scenario = o.bodyFile
	}
	metricsClient := &http.Client{Timeout: 10 * time.Second}
	mallocsBefore, mallocsErr := 0.0, errors.New("no -metrics-url")
	if o.metricsURL != "" {
		mallocsBefore, mallocsErr = loadtest.Mallocs(ctx, metricsClient, o.metricsURL)
	}
	var cpuBefore time.Duration
	if o.pid > 0 {
		if cpuBefore, err = loadtest.CPUTime(o.pid); err != nil {
			return false, err
		}
	}

	cfg.Requests, cfg.Duration, cfg.Rate = o.n, o.duration, o.rate
	runner := loadtest.NewRunner(cfg)
	mon := startMonitor(o, runner)
	res := runner.Run(ctx)
	mon.stop()

	if o.pid > 0 {
		cpuAfter, err := loadtest.CPUTime(o.pid)
		if err != nil {
			return false, fmt.Errorf("pid %d ended during the run: %w", o.pid, err)
		}
		if n := res.Requests(); n > 0 {
			s.CPUUsPerReq = ptr(float64((cpuAfter - cpuBefore).Microseconds()) / float64(n))
		}
		mon.report(&s)
	}
	if o.metricsURL != "" {
		if mallocsErr == nil {
			var after float64
			after, mallocsErr = loadtest.Mallocs(ctx, metricsClient, o.metricsURL)
			if mallocsErr == nil && res.Requests() > 0 {
				s.AllocsPerReq = ptr((after - mallocsBefore) / float64(res.Requests()))
			}
		}
		if mallocsErr != nil {
			s.AllocsNote = mallocsErr.Error()
		}
	}

	fill(&s, res, cfg.Format)
	if o.asJSON {
		b, err := json.Marshal(s, jsontext.WithIndent("  "))
		if err != nil {
			return true, err
		}
		_, err = out.Write(append(b, '\n'))
		return s.Errors > 0, err
	}
	printText(out, s)
	return s.Errors > 0, nil
}

func fill(s *summary, res *loadtest.Result, f loadtest.Format) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	s.Requests, s.OK, s.Errors = res.Requests(), res.Counts[loadtest.OK], res.Errors()
	s.ErrorsByKind, s.Statuses = byKind(res), res.Statuses
	s.ElapsedS = res.Elapsed.Seconds()
	if s.ElapsedS > 0 {
		s.ReqPerS = float64(s.Requests) / s.ElapsedS
	}
	s.P50Ms, s.P90Ms = ms(loadtest.Percentile(res.Latencies, 50)), ms(loadtest.Percentile(res.Latencies, 90))
	s.P99Ms, s.MaxMs = ms(loadtest.Percentile(res.Latencies, 99)), ms(loadtest.Percentile(res.Latencies, 100))
	if f.Streams() && s.OK > 0 {
		s.FirstLineP50Ms = ptr(ms(loadtest.Percentile(res.FirstLines, 50)))
		s.LinesPerStream = ptr(float64(res.Lines) / float64(s.OK))
	}
}

func byKind(res *loadtest.Result) map[string]int {
	m := map[string]int{}
	for k, c := range res.Counts {
		if kind := loadtest.Kind(k); kind != loadtest.OK {
			m[kind.String()] = c
		}
	}
	return m
}

// monitor samples the target's RSS while the run goes on.
type monitor struct {
	pid     int
	start   time.Time
	quit    chan struct{}
	wg      sync.WaitGroup
	samples []rssSample
	peak    int64
	// The memory run: the highest RSS while every stream was open.
	openKiB int64
	openN   int64
}

func startMonitor(o options, runner *loadtest.Runner) *monitor {
	m := &monitor{pid: o.pid, start: time.Now(), quit: make(chan struct{})}
	if o.pid <= 0 {
		return m
	}
	m.sample(o.rssLog, runner) // the start value, before any request
	m.wg.Go(func() {
		tick := time.NewTicker(o.sampleEvery)
		defer tick.Stop()
		// Polled often so the memory run catches the moment all streams are open.
		poll := time.NewTicker(20 * time.Millisecond)
		defer poll.Stop()
		for {
			select {
			case <-m.quit:
				return
			case <-tick.C:
				m.sample(o.rssLog, runner)
			case <-poll.C:
				// The highest value, not the first: the target's heap keeps growing for a
				// while after the last stream opened (buffers, GC headroom), and the
				// steady state of that many open streams is what the number is for.
				if o.rssOpen && runner.Open() >= int64(o.concurrency) {
					if kib, err := loadtest.RSS(m.pid); err == nil && kib > m.openKiB {
						m.openKiB, m.openN = kib, int64(o.concurrency)
						m.peak = max(m.peak, kib)
					}
				}
			}
		}
	})
	return m
}

func (m *monitor) sample(log bool, runner *loadtest.Runner) {
	kib, err := loadtest.RSS(m.pid)
	if err != nil {
		return // the process is gone; the end of the run reports it
	}
	t := time.Since(m.start).Seconds()
	m.samples = append(m.samples, rssSample{TS: t, KiB: kib})
	m.peak = max(m.peak, kib)
	if log {
		fmt.Fprintf(os.Stderr, "rss t=%5.1fs %8d KiB  open=%d done=%d\n", t, kib, runner.Open(), runner.Done())
	}
}

// stop ends sampling and takes the end value.
func (m *monitor) stop() {
	close(m.quit)
	m.wg.Wait()
	if m.pid > 0 {
		kib, err := loadtest.RSS(m.pid)
		if err == nil {
			m.samples = append(m.samples, rssSample{TS: time.Since(m.start).Seconds(), KiB: kib})
			m.peak = max(m.peak, kib)
		}
	}
}

func (m *monitor) report(s *summary) {
	if len(m.samples) == 0 {
		return
	}
	s.RSSSamples = m.samples
	s.RSSStartKiB, s.RSSEndKiB, s.RSSPeakKiB = ptr(m.samples[0].KiB), ptr(m.samples[len(m.samples)-1].KiB), ptr(m.peak)
	if m.openN > 0 {
		s.RSSOpenKiB, s.OpenStreams = ptr(m.openKiB), ptr(m.openN)
		s.KiBPerOpen = ptr(float64(m.openKiB-m.samples[0].KiB) / float64(m.openN))
	}
}

func printText(w io.Writer, s summary) {
	fmt.Fprintf(w, "%s  %s  concurrency %d", s.Scenario, s.URL, s.Concurrency)
	if s.Rate > 0 {
		fmt.Fprintf(w, ", scheduled %.0f req/s", s.Rate)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "requests   %d in %.2fs = %.1f req/s\n", s.Requests, s.ElapsedS, s.ReqPerS)
	fmt.Fprintf(w, "errors     %d", s.Errors)
	if s.Errors > 0 {
		fmt.Fprintf(w, " (%s)", errorsText(s.ErrorsByKind, s.Statuses))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "latency    p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms\n", s.P50Ms, s.P90Ms, s.P99Ms, s.MaxMs)
	if s.FirstLineP50Ms != nil {
		fmt.Fprintf(w, "stream     first line p50 %.2fms, %.1f lines per stream\n", *s.FirstLineP50Ms, *s.LinesPerStream)
	}
	if s.CPUUsPerReq != nil {
		fmt.Fprintf(w, "cpu        %.1f µs/req (pid %d, user+system)\n", *s.CPUUsPerReq, s.PID)
	}
	if s.RSSStartKiB != nil {
		fmt.Fprintf(w, "rss        start %d KiB, peak %d KiB, end %d KiB\n", *s.RSSStartKiB, *s.RSSPeakKiB, *s.RSSEndKiB)
	}
	if s.KiBPerOpen != nil {
		fmt.Fprintf(w, "open       highest rss with all %d streams open %d KiB = %.1f KiB per open stream over the start\n", *s.OpenStreams, *s.RSSOpenKiB, *s.KiBPerOpen)
	}
	switch {
	case s.AllocsPerReq != nil:
		fmt.Fprintf(w, "allocs     %.0f per request\n", *s.AllocsPerReq)
	case s.AllocsNote != "":
		fmt.Fprintf(w, "allocs     n/a (%s)\n", s.AllocsNote)
	}
}

// errorsText lists the kinds that occurred, e.g. "status 3, truncated 1; statuses map[429:3]".
func errorsText(byKind map[string]int, statuses map[int]int) string {
	var kinds []string
	for k, c := range byKind {
		if c > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, c))
		}
	}
	slices.Sort(kinds)
	text := strings.Join(kinds, ", ")
	if len(statuses) > 0 {
		text += fmt.Sprintf("; statuses %v", statuses)
	}
	return text
}

func ptr[T any](v T) *T { return &v }
