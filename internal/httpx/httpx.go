// Package httpx holds what the gateway's REST surfaces share below their wires: reading a
// request body under the body deadline, answering without reading one, writing a stream
// whose client may stop reading, and the HTTP status of each kind of failure.
package httpx

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/nirmata/llm-gateway/internal/bufpool"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/toolguard"
)

// ReadBody appends a request body of at most limit bytes to dst, sized from
// Content-Length. It reads under the deadline the server's middleware set
// (body_read_timeout) and lifts it once the body is in: it is a connection deadline, and
// one that passed during a long call would cancel the call's context (net/http reads on
// in the background to notice a client that leaves). The server has no ReadTimeout for
// the same reason. Errors are fault.ErrBodyTooLarge, fault.ErrBodyTimeout, or a refusal of
// the body (fault.ErrInvalidBody).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64, dst []byte) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, fault.ErrBodyTooLarge
	}
	// Sized from Content-Length, but not trusting it beyond 64 KiB before the bytes arrive,
	// with the room ReadFrom wants free before each read (bytes.MinRead): with less, the
	// read that finds the end of the body would grow the buffer, copying it whole.
	buf := bytes.NewBuffer(dst)
	buf.Grow(int(min(max(r.ContentLength, 512), 64<<10)) + bytes.MinRead)
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			return nil, fault.ErrBodyTooLarge
		case errors.As(err, &netErr) && netErr.Timeout():
			return nil, fault.ErrBodyTimeout
		}
		return nil, fault.Refuse(fault.ErrInvalidBody, fault.ReasonInvalidValue, "reading the body failed: %v", err).At("")
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return buf.Bytes(), nil
}

// ReadPooledBody is ReadBody into a buffer of the pool, as a surface reads its request: on
// an error the buffer goes back, a body over the limit is counted as rejected in m, and the
// rest of the body is skipped (SkipBody). Give the buffer back with bufpool.Put(bp, body)
// once the body is decoded.
func ReadPooledBody(w http.ResponseWriter, r *http.Request, limit int64, m *metrics.Metrics) (bp *[]byte, body []byte, err error) {
	bp = bufpool.Get()
	body, err = ReadBody(w, r, limit, *bp)
	if err != nil {
		bufpool.Put(bp, nil)
		if errors.Is(err, fault.ErrBodyTooLarge) {
			m.Rejected(metrics.RejectTooLarge)
		}
		SkipBody(w) // what is left of the body is not read
		return nil, nil, err
	}
	return bp, body, nil
}

// SkipBody is for an answer given without reading the request's body: the connection
// closes after the answer, and nothing more is read from it, where net/http would read up
// to 256 KiB of the body first (before the answer, and again after it) to keep the
// connection. A stalled body then delays neither the answer nor the close.
func SkipBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// StreamWriter writes a stream's lines to a client that may stop reading: each write is
// flushed at once, and bounded by a write deadline, so a stalled client cannot hold the
// upstream call and its slot. Not safe for concurrent use.
type StreamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// StartStream sends the 200 and headers of a stream of contentType, flushed at once, and
// returns a writer for its lines. Call End when the stream is over.
func StartStream(w http.ResponseWriter, contentType string, writeTimeout time.Duration) *StreamWriter {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx and friends: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	return &StreamWriter{w: w, rc: rc, timeout: writeTimeout}
}

// Write writes and flushes b; an error means the client is gone or stopped reading.
func (s *StreamWriter) Write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// WriteFailed is the outcome, as a snake-case gRPC code, of a stream whose Write failed:
// the client is gone ("canceled"), or stopped reading for the write timeout
// ("deadline_exceeded").
func WriteFailed(err error) string {
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return fault.KindTimeout.Code()
	}
	return fault.KindCanceled.Code()
}

// End lifts the write deadline: the connection may serve more requests.
func (s *StreamWriter) End() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// statusOf is the one table of the REST surfaces' HTTP statuses (docs/PROTOCOL.md 5):
// Nirmata REST and OpenAI's API answer each fault.Kind with the same status.
var statusOf = [fault.Kinds]int{
	fault.KindInternal:        http.StatusInternalServerError,
	fault.KindInvalid:         http.StatusBadRequest,
	fault.KindUnauthenticated: http.StatusUnauthorized,
	fault.KindNotFound:        http.StatusNotFound,
	fault.KindTooLarge:        http.StatusRequestEntityTooLarge,
	fault.KindBodyTimeout:     http.StatusRequestTimeout,
	fault.KindRateLimited:     http.StatusTooManyRequests,
	fault.KindTimeout:         http.StatusGatewayTimeout,
	fault.KindUnavailable:     http.StatusServiceUnavailable,
	fault.KindUpstream:        http.StatusBadGateway,
	fault.KindCredentials:     http.StatusBadGateway,
	fault.KindNoCredentials:   http.StatusServiceUnavailable,
	fault.KindCanceled:        499, // nginx's "client closed request"
	fault.KindWrongMethod:     http.StatusMethodNotAllowed,
	fault.KindURITooLong:      http.StatusRequestURITooLong,
	fault.KindHeadersTooLarge: http.StatusRequestHeaderFieldsTooLarge,
}

// Status is the HTTP status a REST answer of kind k has.
func Status(k fault.Kind) int { return statusOf[k] }

// HeaderIgnored lists the request fields a REST call accepted without effect
// (docs/PROTOCOL.md 10.1); gRPC sends the same as response header metadata.
const HeaderIgnored = "X-Gateway-Ignored-Params"

// MaxIgnored bounds the names HeaderIgnored lists.
const MaxIgnored = core.MaxIgnored

// SetIgnored sets HeaderIgnored to core.IgnoredValue of the paths; nothing when none was
// ignored.
func SetIgnored(h http.Header, ignored []string) {
	if len(ignored) > 0 {
		h.Set(HeaderIgnored, core.IgnoredValue(ignored))
	}
}

// HeaderToolBudget says a REST call's max_tool_rounds were spent (docs/PROTOCOL.md 13.5);
// gRPC sends the same as response header metadata.
const HeaderToolBudget = "X-Gateway-Tool-Budget"

// HeaderThinking says what happened to extended thinking (docs/PROTOCOL.md 11.4).
const HeaderThinking = "X-Gateway-Thinking"

// HeaderStrict says a request's strict tools went to a model that does not hold calls to
// their schemas and were not repaired either, as the operator turned tool validation off
// (docs/PROTOCOL.md 13.1); gRPC sends the same as response header metadata.
const HeaderStrict = "X-Gateway-Strict"

// HeaderToolValidation says a call's tool calls were returned invalid or repaired
// (docs/PROTOCOL.md 13.2); on a stream it is a trailer.
const HeaderToolValidation = "X-Gateway-Tool-Validation"

// SetCallHeaders sets the headers of what the core did with a unary call: the ignored
// fields, the spent tool budget, the thinking outcome, strict tools left unenforced and the
// tool validation outcome.
func SetCallHeaders(h http.Header, res core.Result) {
	setKnown(h, res)
	if res.ToolValidation != "" {
		h.Set(HeaderToolValidation, res.ToolValidation)
	}
}

// SetStreamHeaders is SetCallHeaders for a stream, before its first byte: what is known
// then. A stream whose tool calls are checked learns its validation outcome only at its
// end, so HeaderToolValidation is declared as a trailer, which SetStreamTrailers sets.
func SetStreamHeaders(h http.Header, res core.Result) {
	setKnown(h, res)
	if res.Validating {
		h.Set("Trailer", HeaderToolValidation)
	}
}

// SetStreamTrailers sets the trailer SetStreamHeaders declared, once the stream is over.
func SetStreamTrailers(h http.Header, res core.Result) {
	if res.Validating && res.ToolValidation != "" {
		h.Set(HeaderToolValidation, res.ToolValidation)
	}
}

func setKnown(h http.Header, res core.Result) {
	SetIgnored(h, res.Ignored)
	if res.BudgetExhausted {
		h.Set(HeaderToolBudget, "exhausted")
	}
	if res.Thinking != "" {
		h.Set(HeaderThinking, res.Thinking)
	}
	if res.StrictUnenforced {
		h.Set(HeaderStrict, toolguard.StrictUnenforced)
	}
}
