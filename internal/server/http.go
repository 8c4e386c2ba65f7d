package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bufpool"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/jsonapi"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// HTTPOptions configures the REST handler.
type HTTPOptions struct {
	Keys         *Keyring
	MaxBodyBytes int64
	// Upstream describes the upstream on /readyz ("bedrock" or "bedrock-simulator").
	Upstream string
	// StreamWriteTimeout bounds one write of a stream to a client that stopped reading;
	// zero means defaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// BodyReadTimeout bounds the time from a request's headers to the end of its body;
	// zero means defaultBodyReadTimeout.
	BodyReadTimeout time.Duration
}

// defaultStreamWriteTimeout is the stream write bound of REST and gRPC when none is given,
// the configuration's default.
const defaultStreamWriteTimeout = 30 * time.Second

// NewHTTPHandler returns the REST API: a grpc-gateway mux serving the generated
// capabilities routes, with POST /llm-apps/chat and the health endpoints added to it.
func NewHTTPHandler(ctx context.Context, svc *Service, opts HTTPOptions, log *zap.Logger) (http.Handler, error) {
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = defaultStreamWriteTimeout
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = defaultBodyReadTimeout
	}
	h := &restHandler{svc: svc, opts: opts, log: log, access: accessLog(log)}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &jsonapi.Marshaler{}),
		runtime.WithErrorHandler(func(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
			h.writeError(w, r, err)
		}),
		runtime.WithRoutingErrorHandler(func(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, code int) {
			if code == http.StatusMethodNotAllowed {
				h.writeJSONError(w, r, code, codes.Unimplemented, "method "+clip.String(r.Method, clip.QuoteMax)+" is not allowed on "+clip.String(r.URL.Path, clip.QuoteMax))
				return
			}
			h.writeJSONError(w, r, code, codes.NotFound, "no route for "+clip.String(r.Method, clip.QuoteMax)+" "+clip.String(r.URL.Path, clip.QuoteMax))
		}),
	)
	if err := llmgatewayv1.RegisterChatServiceHandlerServer(ctx, mux, &chatServer{svc: svc, log: log}); err != nil {
		return nil, err
	}
	// One route answers unary or streamed depending on a body field, which a generated
	// handler cannot dispatch on; it is served by the gateway's own handler on the same mux.
	for _, route := range []struct {
		method, path string
		h            runtime.HandlerFunc
	}{
		{http.MethodPost, "/llm-apps/chat", h.chat},
		{http.MethodGet, "/healthz", h.healthz},
		{http.MethodGet, "/readyz", h.readyz},
		{http.MethodGet, "/metrics", func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
			svc.opts.Metrics.Handler().ServeHTTP(w, r)
		}},
	} {
		if err := mux.HandlePath(route.method, route.path, route.h); err != nil {
			return nil, err
		}
	}
	return h.middleware(h.chatFirst(mux)), nil
}

// chatFirst sends POST /llm-apps/chat straight to chat, and everything else to mux (which
// would send that route to chat too). A stream's handler goroutine keeps the largest stack
// it grew to for as long as the stream is open; under the mux's frames, about 1.4 KiB, a
// stream's deepest calls outgrew 8 KiB, so every open stream held 16 KiB of stack. The mux
// matches r.URL.Path as it is (the legacy unescaping mode) and has no other POST route; it
// changes the method only when X-HTTP-Method-Override is set, so such requests still go
// through it.
func (h *restHandler) chatFirst(mux http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/llm-apps/chat" && r.Header.Get("X-HTTP-Method-Override") == "" {
			h.chat(w, r, nil)
			return
		}
		mux.ServeHTTP(w, r)
	}
}

type restHandler struct {
	svc    *Service
	opts   HTTPOptions
	log    *zap.Logger
	access *zap.Logger // see accessLog
}

// routeOf names a REST path for metrics; unknown paths share one name, so a scan of
// random paths cannot grow the series.
func routeOf(path string) string {
	switch path {
	case "/llm-apps/chat":
		return metrics.RouteChat
	case "/llm-apps/capabilities", "/capabilities":
		return metrics.RouteCapabilities
	default:
		return "other"
	}
}

// openPaths need no key (docs/PROTOCOL.md section 2).
func openPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/llm-apps/capabilities", "/capabilities":
		return true
	}
	return false
}

// middleware gives every request an id (X-Request-Id), checks the key, and logs the call.
func (h *restHandler) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		info := &callInfo{start: start, route: routeOf(r.URL.Path)}
		r = r.WithContext(withCallInfo(withRequestID(r.Context(), id), info))
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		// The body must arrive within body_read_timeout, whoever reads it: a handler, or
		// net/http draining what a handler left. A handler that read its body lifts the
		// deadline (readBody), so a long call is not cut by it.
		_ = http.NewResponseController(w).SetReadDeadline(start.Add(h.opts.BodyReadTimeout))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				h.log.Error("panic serving request", zap.String("request_id", id), zap.Any("panic", p), zap.StackSkip("stack", 1))
				if !rec.wrote {
					h.writeJSONError(rec, r, http.StatusInternalServerError, codes.Internal, "internal error")
				}
			}
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return // probes and scrapes would drown the log
			}
			info.finish(h.svc.opts.Metrics)
			h.access.Info("http",
				zap.String("request_id", id),
				zap.String("method", clip.String(r.Method, clip.QuoteMax)),
				zap.String("route", clip.String(r.URL.Path, clip.LogMax)),
				zap.Int("status", rec.status),
				zap.Duration("latency", time.Since(start)),
				info.fields())
		}()
		if keys := h.opts.Keys; keys.enabled() && !openPath(r.URL.Path) {
			keyID, ok := keys.checkOne(r.Header.Values("Authorization"))
			if !ok {
				h.svc.opts.Metrics.Rejected(metrics.RejectUnauthenticated)
				skipBody(rec)
				h.writeError(rec, r, errUnauthenticated)
				return
			}
			info.keyID = keyID
		}
		next.ServeHTTP(rec, r)
	})
}

// chat serves POST /llm-apps/chat.
func (h *restHandler) chat(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	bp := bufpool.Get()
	body, err := readBody(w, r, h.opts.MaxBodyBytes, *bp)
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			h.svc.opts.Metrics.Rejected(metrics.RejectTooLarge)
		}
		skipBody(w)
		h.writeError(w, r, err)
		return
	}
	req, err := jsonapi.DecodeChatRequest(body)
	bufpool.Put(bp, body) // the request copies what it keeps of the body
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if r.URL.RawQuery != "" {
		if err := applyQuery(req, r.URL.Query()); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	if req.Stream || req.Chunked {
		callInfoFrom(r.Context()).route = metrics.RouteChatStream
		// Opened here rather than in stream, so stream's frame is not under the signing of
		// the upstream request, a stream's deepest call: see chatFirst.
		st, err := h.svc.OpenStream(r.Context(), req)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		defer st.Close()
		h.stream(w, r, st, req.Chunked)
		return
	}
	resp, err := h.svc.Chat(r.Context(), req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	bp = bufpool.Get()
	b := jsonapi.AppendChatResponse(*bp, resp)
	hdr := w.Header()
	hdr["Content-Type"] = []string{"application/json"}
	// Not left to net/http, which counts only answers that fit its 2 KiB buffer and
	// chunks the rest.
	hdr["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b) // copied into the connection's buffer or written: b is free after
	bufpool.Put(bp, b)
}

// skipBody is for an answer given without reading the request's body: the connection
// closes after the answer, and nothing more is read from it, where net/http would read up
// to 256 KiB of the body first (before the answer, and again after it) to keep the
// connection. A stalled body then delays neither the answer nor the close.
func skipBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// defaultBodyReadTimeout is the body_read_timeout when none is given, the configuration's
// default.
const defaultBodyReadTimeout = 30 * time.Second

// readBody appends a request body of at most limit bytes to dst, sized from
// Content-Length. It reads under the deadline the middleware set, and lifts it once the
// body is in: it is a connection deadline, and one that passed during a long call would
// cancel the call's context. The server has no ReadTimeout for the same reason.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, dst []byte) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errBodyTooLarge
	}
	// Sized from Content-Length, but not trusting it beyond 64 KiB before the bytes arrive.
	buf := bytes.NewBuffer(dst)
	buf.Grow(int(min(max(r.ContentLength, 512), 64<<10)) + 1)
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			return nil, errBodyTooLarge
		case errors.As(err, &netErr) && netErr.Timeout():
			return nil, errBodyTimeout
		}
		return nil, fmt.Errorf("%w: reading the body failed: %v", jsonapi.ErrInvalidJSON, err)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return buf.Bytes(), nil
}

// applyQuery folds the query parameters of POST /llm-apps/chat into the request: model
// (when the body names none), provider, client_type, stream and chunked.
func applyQuery(req *llmgatewayv1.ChatRequest, q url.Values) error {
	if req.Model == "" {
		req.Model = q.Get("model")
	}
	req.Provider = q.Get("provider")
	req.ClientType = q.Get("client_type")
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"stream", &req.Stream}, {"chunked", &req.Chunked}} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: query parameter %s=%s: want true or false", translate.ErrInvalidRequest, f.name, clip.Quote(v))
		}
		*f.dst = *f.dst || b
	}
	return nil
}

// stream answers with the JSONL delta stream (docs/PROTOCOL.md 3.2) or, with chunked, the
// Nirmata chunked events (3.3): each upstream event's lines are written and flushed as it
// arrives. The client going away cancels the request context, which cancels the upstream
// call.
func (h *restHandler) stream(w http.ResponseWriter, r *http.Request, st *Stream, chunked bool) {
	ctx := r.Context()
	encode := func(dst []byte, ev chat.Event) []byte {
		if p := EventToProto(ev); p != nil {
			return jsonapi.AppendStreamEvent(dst, p)
		}
		return dst
	}
	encodeErr := func(dst []byte, c errClass) []byte { return jsonapi.AppendStreamEvent(dst, errorEvent(c)) }
	if chunked {
		ch := stream.NewChunker(requestID(ctx))
		encode = ch.Append
		encodeErr = func(dst []byte, c errClass) []byte { return ch.AppendError(dst, codeName(c.code), c.message) }
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/x-ndjson")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // nginx and friends: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	// The connection may serve more requests after this one; leave it no deadline of ours.
	defer rc.SetWriteDeadline(time.Time{}) //nolint:errcheck // best effort

	var (
		events []chat.Event
		buf    []byte
		err    error
	)
	defer func() {
		// A bug after the first byte still ends the stream the way the contract says.
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Error("panic serving stream", zap.String("request_id", requestID(ctx)), zap.Any("panic", p), zap.StackSkip("stack", 1))
			_, _ = w.Write(encodeErr(nil, errClass{code: codes.Internal, message: "internal error"}))
			_ = rc.Flush()
		}
	}()
	for {
		events, err = st.Next(events[:0])
		buf = buf[:0]
		for _, ev := range events {
			buf = encode(buf, ev)
		}
		if err != nil && err != io.EOF {
			buf = encodeErr(buf, answer(ctx, h.log, err))
		}
		if len(buf) > 0 {
			// A client that stops reading must not hold the upstream and its slot forever.
			_ = rc.SetWriteDeadline(time.Now().Add(h.opts.StreamWriteTimeout))
			if _, werr := w.Write(buf); werr != nil {
				return // the client is gone
			}
			if ferr := rc.Flush(); ferr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (h *restHandler) healthz(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"status":"ok"}`)
}

func (h *restHandler) readyz(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	state := "ready"
	if h.svc.Draining() {
		state = "draining"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = io.WriteString(w, `{"status":"`+state+`","upstream":"`+h.opts.Upstream+`"}`)
}

// writeError answers with the JSON error body of docs/PROTOCOL.md section 5.
func (h *restHandler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	c := answer(r.Context(), h.log, err)
	if c.retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	h.writeJSONError(w, r, c.httpStatus, c.code, c.message)
}

func (h *restHandler) writeJSONError(w http.ResponseWriter, r *http.Request, httpStatus int, code codes.Code, msg string) {
	callInfoFrom(r.Context()).code = codeName(code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_, _ = w.Write(jsonapi.AppendError(nil, msg, codeName(code), requestID(r.Context())))
}

// statusRecorder remembers the status for the access log. It unwraps, so
// http.ResponseController can still flush through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
