package bedrocksim

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBodyBytes bounds a request body; the simulator reads it whole before answering.
const maxBodyBytes = 32 << 20

// Options tune the simulator. The zero value answers at once and injects nothing.
type Options struct {
	// FirstTokenDelay is waited before the first stream event (the 200 and its headers go
	// out at once, as Bedrock's do), or before a unary answer.
	FirstTokenDelay time.Duration
	// DeltaDelay is waited between stream deltas.
	DeltaDelay time.Duration
	// Faults are injected failures, checked in order for every request that passes
	// authentication, model resolution and validation (invalid_tool_args: for every answer
	// that calls a tool).
	Faults []Fault
	// Now tells the time for the prompt cache's TTLs; nil means time.Now. Tests move it past
	// a TTL instead of sleeping.
	Now func() time.Time
	// PromptCacheEntries bounds the prefixes the prompt cache remembers, the least recently
	// used going first; 0 means 4,096.
	PromptCacheEntries int
}

// Server is the simulated Bedrock Runtime endpoint. It is safe for concurrent use.
type Server struct {
	opts     Options
	mux      *http.ServeMux
	faults   *faultCounter
	cache    *promptCache
	requests atomic.Int64

	closeOnce sync.Once
	closed    chan struct{}
}

// New returns a simulator with the given options.
func New(opts Options) *Server {
	s := &Server{opts: opts, faults: newFaultCounter(opts.Faults), cache: newPromptCache(opts.PromptCacheEntries), closed: make(chan struct{})}
	s.mux = http.NewServeMux()
	// The SDK path-escapes the model id, so an ARN arrives as one segment and PathValue
	// unescapes it.
	s.mux.HandleFunc("POST /model/{modelId}/converse", func(w http.ResponseWriter, r *http.Request) {
		s.serveModel(w, r, false)
	})
	s.mux.HandleFunc("POST /model/{modelId}/converse-stream", func(w http.ResponseWriter, r *http.Request) {
		s.serveModel(w, r, true)
	})
	s.mux.HandleFunc("POST /model/{modelId}/count-tokens", s.serveCountTokens)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		setRequestID(w)
		writeError(w, &apiError{Code: codeUnknownOperation, Status: http.StatusNotFound,
			Message: "The simulator serves only POST /model/{modelId}/converse, /converse-stream and /count-tokens."})
	})
	return s
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Requests reports how many model requests (converse or converse-stream) arrived, valid or
// not; tests use it to count the gateway's retries.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Close releases requests held by a hang fault (they answer ServiceUnavailableException),
// so an httptest.Server wrapping the simulator can shut down while a client still waits.
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.closed) }) }

func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, stream bool) {
	s.requests.Add(1)
	setRequestID(w)
	// Read the whole body before any answer, even an error: a client still writing its body
	// when the answer arrives would see a reset connection instead of the error.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, validation(fmt.Sprintf("Malformed input request: the request body is larger than %d bytes, reformat your input and try again.", maxBodyBytes)))
		}
		return // the client went away
	}
	if !authorized(r.Header.Get("Authorization")) {
		writeError(w, &apiError{Code: codeAccessDenied, Status: http.StatusForbidden,
			Message: "Missing or malformed Authorization header: expected a SigV4 signature (AWS4-HMAC-SHA256) or a Bedrock API key (Bearer)."})
		return
	}
	model, found := lookupModel(r.PathValue("modelId"))
	if !found {
		writeError(w, modelNotFound())
		return
	}
	req, apiErr := decodeRequest(body)
	if apiErr == nil {
		apiErr = validate(model, req, stream)
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}

	ctx := r.Context()
	t := target{stream: stream, model: r.PathValue("modelId"), foundation: model.ID, region: SigningRegion(r.Header.Get("Authorization"))}
	var streamFault *Fault // a fault applied while streaming
	if f, ok := s.faults.take(t); ok {
		switch f.Kind {
		case FaultHang:
			select {
			case <-ctx.Done():
			case <-s.closed:
				writeError(w, faultError(FaultUnavailable))
			}
			return
		case FaultStreamException, FaultTruncate:
			streamFault = &f
		case FaultRedactedThinking:
			req.redactThinking = true
		default:
			writeError(w, faultError(f.Kind))
			return
		}
	}

	a := buildAnswer(model, req, body)
	if s.faults.breaksArgs && len(a.Calls) > 0 {
		if broken := breakCalls(req.ToolConfig, a.Calls); broken != nil && s.faults.takeInvalidArgs(t) {
			a.Calls = broken
		}
	}
	usage := s.usage(model, t.region, req, body, a)
	if stream {
		s.writeStream(ctx, w, a, usage, streamFault)
		return
	}
	if !sleep(ctx, s.opts.FirstTokenDelay) {
		return
	}
	resp := converseResponse{
		Output:     converseOutput{Message: a.message()},
		StopReason: a.StopReason,
		Usage:      usage,
		Metrics:    metrics{LatencyMs: s.latencyMs()},
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(marshal(resp))
}

// usage counts the tokens of answer a to req, with what the prompt cache read and wrote
// (docs/BEDROCK.md H9): inputTokens is the rest of the request's estimate, never below 0 (the
// estimate is raised to what the cache counted, if it falls short), and totalTokens counts
// everything.
func (s *Server) usage(m ModelInfo, region string, req *converseRequest, body []byte, a answer) tokenUsage {
	u := usageFor(body, a)
	now := time.Now
	if s.opts.Now != nil {
		now = s.opts.Now
	}
	read, write, details := s.cache.account(prefixes(m, region, req), now())
	total := max(u.InputTokens, read+write)
	u.InputTokens = total - read - write
	u.CacheReadInputTokens, u.CacheWriteInputTokens, u.CacheDetails = read, write, details
	u.TotalTokens = total + u.OutputTokens
	return u
}

// latencyMs is the latency the simulator reports: fixed, so answers stay deterministic.
func (s *Server) latencyMs() int64 { return 5 + s.opts.FirstTokenDelay.Milliseconds() }

// authorized accepts what the SDK sends: a SigV4 signature or a Bedrock API key. The
// signature itself is not checked; the simulator has no secrets to check it against.
func authorized(h string) bool {
	for _, scheme := range []string{"AWS4-HMAC-SHA256 ", "Bearer "} {
		if strings.HasPrefix(h, scheme) && strings.TrimSpace(h[len(scheme):]) != "" {
			return true
		}
	}
	return false
}

// modelNotFound is Bedrock's answer to a model id it cannot resolve.
func modelNotFound() *apiError {
	return &apiError{Code: codeResourceNotFound, Status: http.StatusNotFound,
		Message: "Could not resolve the foundation model from the provided model identifier."}
}

func setRequestID(w http.ResponseWriter) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	w.Header().Set("x-amzn-RequestId", fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

// sleep waits d, or less if ctx ends first; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
