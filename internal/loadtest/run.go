package loadtest

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one run: Concurrency workers, each sending its next request as soon as the
// previous answer was read to its end (a closed loop), or, with Rate, at its slot on a fixed
// schedule (an open loop).
type Config struct {
	Client *http.Client
	URL    string
	Body   []byte
	Header http.Header // sent with every request; Content-Type defaults to application/json
	Format Format
	Expect []byte // see Scenario.Expect
	Usage  bool   // see Scenario.Usage
	// Concurrency is the number of requests in flight.
	Concurrency int
	// Requests is the total to send; when 0, workers start requests until Duration has
	// passed, and the run ends when the last one is answered.
	Requests int
	Duration time.Duration
	// Rate, when above 0, starts requests on a fixed schedule of Rate per second, whatever
	// the answers' pace: the latency at a given load, as a client population sees it. A
	// request that waited for a free worker counts its wait from its scheduled start (no
	// coordinated omission); Concurrency must exceed Rate times the latency for the
	// schedule to hold.
	Rate float64
}

// NewClient returns an HTTP/1.1 client that keeps one connection per worker alive between
// requests (so a run measures requests, not TCP handshakes) and never asks for gzip (so
// streams are not buffered by a compressor and bytes are read as sent).
func NewClient(concurrency int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        0, // no global cap
			MaxIdleConnsPerHost: max(concurrency, 2),
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
	}
}

// Runner runs one Config. Open may be read while Run is under way.
type Runner struct {
	cfg  Config
	open atomic.Int64
	done atomic.Int64
}

// NewRunner returns a runner for cfg.
func NewRunner(cfg Config) *Runner {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(cfg.Concurrency, 0)
	}
	return &Runner{cfg: cfg}
}

// Open is the number of streams that have received their first line and not yet ended.
func (r *Runner) Open() int64 { return r.open.Load() }

// Done is the number of requests answered so far.
func (r *Runner) Done() int64 { return r.done.Load() }

// Result is a run's outcome.
type Result struct {
	Elapsed  time.Duration
	Counts   [numKinds]int // by Kind; Counts[OK] are the successes
	Statuses map[int]int   // status codes of Status errors
	// Latencies of the successful requests, sorted: errors are often fast and would make
	// the run look better than it was.
	Latencies []time.Duration
	// FirstLines are the times to the first line or frame of successful streams, sorted.
	FirstLines []time.Duration
	// Lines is the total of lines (frames) over successful streams.
	Lines int64
}

// Requests is the number of requests answered, successfully or not.
func (r *Result) Requests() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// Errors is the number of failed requests.
func (r *Result) Errors() int { return r.Requests() - r.Counts[OK] }

// Run sends requests until Config.Requests were sent or Config.Duration has passed, and
// waits for every answer. Requests cut short by ctx are not counted.
func (r *Runner) Run(ctx context.Context) *Result {
	var issued atomic.Int64
	start := time.Now()
	deadline := start.Add(r.cfg.Duration)
	// next returns when the next request is due: now in a closed loop, its slot in an open
	// one. It is false when the run has no more requests to start.
	next := func() (time.Time, bool) {
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		k := issued.Add(1) - 1
		if r.cfg.Requests > 0 && k >= int64(r.cfg.Requests) {
			return time.Time{}, false
		}
		at := time.Now()
		if r.cfg.Rate > 0 {
			at = start.Add(time.Duration(float64(k) / r.cfg.Rate * float64(time.Second)))
		}
		return at, r.cfg.Requests > 0 || at.Before(deadline)
	}

	workers := make([]*worker, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := r.newWorker()
		workers[i] = w
		wg.Go(func() {
			for {
				at, ok := next()
				if !ok {
					return
				}
				// A request whose slot has passed was held up by busy workers, that is by
				// the target: its latency counts from the slot. One whose slot is ahead
				// counts from when the sleep ended, so the timer's own lateness (up to a
				// millisecond on Linux) is not put on the target.
				if time.Until(at) > 0 {
					if !sleepUntil(ctx, at) {
						return
					}
					at = time.Now()
				}
				w.one(ctx, at)
			}
		})
	}
	wg.Wait()

	res := &Result{Elapsed: time.Since(start), Statuses: map[int]int{}}
	for _, w := range workers {
		for k, c := range w.res.Counts {
			res.Counts[k] += c
		}
		for code, c := range w.res.Statuses {
			res.Statuses[code] += c
		}
		res.Latencies = append(res.Latencies, w.res.Latencies...)
		res.FirstLines = append(res.FirstLines, w.res.FirstLines...)
		res.Lines += w.res.Lines
	}
	slices.Sort(res.Latencies)
	slices.Sort(res.FirstLines)
	return res
}

// worker is one closed loop; not safe for concurrent use.
type worker struct {
	r      *Runner
	header http.Header // a private copy: the transport reads it while another worker might not
	rd     *reader
	res    Result
}

func (r *Runner) newWorker() *worker {
	h := r.cfg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	w := &worker{r: r, header: h, rd: newReader(), res: Result{Statuses: map[int]int{}}}
	if r.cfg.Requests > 0 {
		w.res.Latencies = make([]time.Duration, 0, r.cfg.Requests/r.cfg.Concurrency+1)
	}
	return w
}

// sleepUntil waits until t; it is false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// one sends a request due at start, reads its answer and records the outcome.
func (w *worker) one(ctx context.Context, start time.Time) {
	cfg := &w.r.cfg
	var firstLine time.Duration
	opened := false
	first := func() {
		firstLine = time.Since(start)
		opened = true
		w.r.open.Add(1)
	}
	kind, lines, status := w.exchange(ctx, first)
	if opened {
		w.r.open.Add(-1)
	}
	if ctx.Err() != nil {
		return // interrupted: neither a success nor the target's failure
	}
	elapsed := time.Since(start)
	w.r.done.Add(1)
	w.res.Counts[kind]++
	switch {
	case kind == Status:
		w.res.Statuses[status]++
	case kind == OK:
		w.res.Latencies = append(w.res.Latencies, elapsed)
		if cfg.Format.Streams() {
			w.res.FirstLines = append(w.res.FirstLines, firstLine)
			w.res.Lines += int64(lines)
		}
	}
}

func (w *worker) exchange(ctx context.Context, first func()) (kind Kind, lines, status int) {
	cfg := &w.r.cfg
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(cfg.Body))
	if err != nil {
		return Transport, 0, 0
	}
	req.Header = w.header
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return Transport, 0, 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Drain so the connection is reused: a run full of errors should not also measure
		// reconnects.
		_, _ = io.Copy(io.Discard, resp.Body)
		return Status, 0, resp.StatusCode
	}
	var res readResult
	switch cfg.Format {
	case FormatJSONL:
		res = w.rd.jsonl(resp.Body, cfg.Expect, first)
	case FormatEventStream:
		res = w.rd.eventStream(resp.Body, cfg.Expect, first)
	case FormatSSE:
		res = w.rd.sse(resp.Body, cfg.Expect, cfg.Usage, first)
	case FormatAnthropicSSE:
		res = w.rd.anthropicSSE(resp.Body, cfg.Expect, first)
	case FormatOpenAI:
		res = w.rd.openai(resp.Body, cfg.Expect)
	default:
		res = w.rd.unary(resp.Body, cfg.Expect)
	}
	return res.kind, res.lines, 0
}

// Percentile is the nearest-rank percentile p (0 < p ≤ 100) of sorted: the smallest value
// with at least p% of the values at or below it. It is 0 for no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The epsilon keeps float error from pushing an exact rank up by one (99.9% of 1000
	// values is rank 999, not 1000).
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
