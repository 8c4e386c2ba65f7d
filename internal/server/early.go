package server

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// MaxHeaderBytes bounds a REST request's line and headers together: the http.Server's
// MaxHeaderBytes. The gateway's clients send a few short headers; net/http's default,
// 1 MiB, would let each connection hold a megabyte for ReadHeaderTimeout.
const MaxHeaderBytes = 64 << 10

// Listener returns l, the listener of the http.Server that serves NewHTTPHandler's API
// with MaxHeaderBytes, answering in JSON what net/http answers itself, as text, before
// any handler runs: a request line or headers over MaxHeaderBytes (414 when the limit is
// reached in the request line, else 431, naming the query parameter, the path or the
// header it was reached in) and a malformed head (400). The answer takes the shape of the
// surface the request's path is under, with a request id, and observed by obs as the
// routes' calls are, a 414 or 431 counted as rejected in m (docs/PROTOCOL.md 5).
//
// net/http keeps its own bound, so no head costs more memory than before: each
// connection notes the first bytes of the head it is reading (its method and path) and
// of the field it is in, and when net/http writes its answer to the connection, the
// connection writes the JSON one instead. A head starts with the first byte read after
// the server last wrote; a client that pipelines its requests may see its early answer
// in the Nirmata shape, without a name.
func Listener(l net.Listener, obs *observe.Observer, m *metrics.Metrics) net.Listener {
	return &earlyListener{Listener: l, obs: obs, metrics: m}
}

type earlyListener struct {
	net.Listener
	obs     *observe.Observer
	metrics *metrics.Metrics
}

func (l *earlyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headConn{Conn: c, obs: l.obs, metrics: l.metrics}, nil
}

// headConn is a server connection that watches the request heads read from it. net/http
// reads (also in the background, while a handler writes) and writes it from different
// goroutines, so the watch is locked.
type headConn struct {
	net.Conn
	obs     *observe.Observer
	metrics *metrics.Metrics

	mu sync.Mutex
	// head is the scan of the head being read, from its first byte to the first write
	// after it (net/http's answer to it, early or not); nil otherwise. Scans are pooled
	// (heads): a connection whose answer is streaming, or that waits for its next
	// request, holds none.
	head *headScan
}

// heads holds the scans of heads being read.
var heads = sync.Pool{New: func() any { return new(headScan) }}

func (c *headConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.head == nil {
			c.head = heads.Get().(*headScan)
		}
		c.head.scan(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

func (c *headConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	head := c.head // not nil: the first write since a head began, maybe net/http's answer to it
	switch {
	case head == nil:
	case bytes.HasPrefix(p, continueLine):
		head.done = true // the body follows: no head until the answer
		head = nil
	default:
		c.head = nil
	}
	c.mu.Unlock()
	if head == nil {
		return c.Conn.Write(p)
	}
	defer func() {
		*head = headScan{}
		heads.Put(head)
	}()
	status, text := earlyAnswer(p)
	if status == 0 {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(c.answer(head, status, text)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close the connection after its early answer, as it does a
// bare TCP connection, so the client reads the answer before the connection closes.
func (c *headConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// continueLine starts net/http's interim answer to Expect: 100-continue, after which the
// body of the same request comes.
var continueLine = []byte("HTTP/1.1 100 ")

// earlyHeaders are what net/http's own answers carry between their status line and their
// text (net/http's conn.serve).
var earlyHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

// earlyAnswer is the status and text of p when p is one of the answers net/http writes
// itself that the gateway answers in JSON: "HTTP/1.1 431 Request Header Fields Too
// Large" or "HTTP/1.1 400 Bad Request…", earlyHeaders, then its text; 0 otherwise.
func earlyAnswer(p []byte) (status int, text string) {
	switch {
	case bytes.HasPrefix(p, []byte("HTTP/1.1 431 ")):
		status = http.StatusRequestHeaderFieldsTooLarge
	case bytes.HasPrefix(p, []byte("HTTP/1.1 400 ")):
		status = http.StatusBadRequest
	default:
		return 0, ""
	}
	i := bytes.Index(p, earlyHeaders)
	if i < 0 {
		return 0, ""
	}
	return status, string(p[i+len(earlyHeaders):])
}

// answer is the JSON answer that replaces net/http's early answer of status with text to
// head; the call is logged and counted as the REST routes' are.
func (c *headConn) answer(head *headScan, status int, text string) []byte {
	method, path := head.target()
	sf := surfaceOf(path)
	call := c.obs.BeginAt(head.began, sf.transport, metrics.RouteOther, method, path)
	err := &fault.HeadError{Malformed: status == http.StatusBadRequest}
	if err.Malformed {
		// net/http's text names what is wrong, in its own words, only for some causes
		// ("400 Bad Request: missing required Host header").
		detail := "the request line or a header is not HTTP/1.1"
		if _, d, ok := strings.Cut(text, ": "); ok {
			detail = clip.String(d, clip.QuoteMax)
		}
		err.Message = "malformed request: " + detail
	} else {
		err.InURI = !head.lineEnded
		c.metrics.Rejected(metrics.RejectTooLarge)
		err.Message = tooLarge(head)
	}
	rec := &recorder{header: http.Header{}}
	sf.writeError(rec, call.RequestID, call.Fail(context.Background(), err))
	call.Status = rec.status
	call.End()
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(rec.status) + " " + http.StatusText(rec.status) + "\r\n")
	rec.header.Set("X-Request-Id", call.RequestID)
	rec.header.Set("Content-Length", strconv.Itoa(rec.body.Len()))
	rec.header.Set("Connection", "close")
	_ = rec.header.Write(&b)
	b.WriteString("\r\n")
	b.Write(rec.body.Bytes())
	return b.Bytes()
}

// tooLarge words a head over MaxHeaderBytes, naming where the limit was reached.
func tooLarge(head *headScan) string {
	limit := strconv.Itoa(MaxHeaderBytes>>10) + " KiB"
	field := string(head.field[:head.fieldN])
	var in, what string
	switch {
	case head.lineEnded:
		what = "request headers too large"
		name, _, _ := strings.Cut(field, ":")
		in = "header " + clip.Quote(strings.TrimSpace(name))
	case head.inQuery:
		what = "request URI too long"
		name, _, _ := strings.Cut(field, "=")
		in = "query parameter " + clip.Quote(name)
	default:
		what, in = "request URI too long", "the path"
	}
	return what + ": the request line and headers are over " + limit + " (the limit was reached in " + in + ")"
}

// headScan is what a connection notes of the request head it is reading: the first bytes
// of its request line, and of the query parameter or header line it is in. It stops at
// the head's end, or a little past MaxHeaderBytes, where net/http stops reading.
type headScan struct {
	// began is when the head's first byte was read; zero before it.
	began time.Time
	n     int
	start [256]byte
	// field is the start of the query parameter or header line the head is in.
	field  [64]byte
	fieldN int
	// inQuery: the request line's query has begun; lineEnded: the request line has
	// ended; blank: the header line so far is empty, or "\r"; done: the head has ended.
	inQuery, lineEnded, blank, done bool
}

// scanLimit is where a head's scan stops: beyond what net/http reads of one head (its
// bound, and a buffer's slop).
const scanLimit = MaxHeaderBytes + 8<<10

func (h *headScan) scan(p []byte) {
	if h.done {
		return
	}
	if h.began.IsZero() {
		h.began = time.Now()
	}
	copy(h.start[min(h.n, len(h.start)):], p)
	if !h.lineEnded {
		line, rest, ended := bytes.Cut(p, []byte("\n"))
		h.n += len(line)
		for len(line) > 0 { // the field starts after the query's "?", then after each "&"
			sep := byte('&')
			if !h.inQuery {
				sep = '?'
			}
			i := bytes.IndexByte(line, sep)
			if i < 0 {
				h.note(line)
				break
			}
			line, h.inQuery, h.fieldN = line[i+1:], true, 0
		}
		if !ended {
			p = nil
		} else {
			h.n++
			p, h.lineEnded, h.blank, h.fieldN = rest, true, true, 0
		}
	}
	for len(p) > 0 && !h.done { // header lines, found a line at a time
		line, rest, ended := bytes.Cut(p, []byte("\n"))
		h.n += len(line)
		h.note(line)
		if len(bytes.TrimRight(line, "\r")) > 0 {
			h.blank = false
		}
		if !ended {
			break
		}
		h.n++
		p = rest
		if h.blank {
			h.done = true // the blank line that ends the head
			return
		}
		h.blank, h.fieldN = true, 0
	}
	if h.n > scanLimit {
		h.done = true
	}
}

// note adds b to the start of the field the head is in.
func (h *headScan) note(b []byte) {
	h.fieldN += copy(h.field[h.fieldN:], b)
}

// target is the method and path of the head's request line, as far as they were read;
// both empty when the head does not start as a request line does.
func (h *headScan) target() (method, path string) {
	line := h.start[:min(h.n, len(h.start))]
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	m, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || !bytes.HasPrefix(rest, []byte("/")) {
		return "", ""
	}
	if i := bytes.IndexAny(rest, " ?"); i >= 0 {
		rest = rest[:i]
	}
	return string(m), string(rest)
}

// recorder keeps the answer a surface's errorWriter writes, for the connection to send.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
