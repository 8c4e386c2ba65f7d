// Package server is the gateway's HTTP server: one net/http ServeMux that serves every
// REST route once (the Nirmata surface, OpenAI's, Anthropic's, health, metrics), with one
// middleware that gives each call its id, checks its key, bounds its body's arrival, turns
// a panic into a 500, and hands the call to the core's access log and metrics; and its
// listener (Listener), which answers in the same shapes what net/http refuses before any
// handler runs.
//
// grpc-gateway is not used: it maps REST onto gRPC methods with the proto's JSON mapping,
// and none of the gateway's REST surfaces has that shape (the Nirmata and OpenAI bodies
// are fixed by their clients), so routing through it bought a marshaler shim, a second
// error path and a route registered twice.
package server

import (
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"go.opentelemetry.io/otel/propagation"

	"github.com/nirmata/llm-gateway/internal/anthropic"
	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/observe"
	"github.com/nirmata/llm-gateway/internal/openai"
	"github.com/nirmata/llm-gateway/internal/responses"
	"github.com/nirmata/llm-gateway/internal/respstore"
	"github.com/nirmata/llm-gateway/internal/seal"
)

// Options configures the HTTP server.
type Options struct {
	Keys         *auth.Keyring
	MaxBodyBytes int64
	// Upstream describes the upstream on /readyz ("bedrock" or "bedrock-simulator").
	Upstream string
	// Store describes the shared store on /readyz ("redis", "redis unreachable"); nil:
	// state is kept in the process ("memory").
	Store interface{ Status() string }
	// Credentials tells /readyz why the gateway has no AWS credentials to call the upstream
	// with, or "" when it has some; nil: the upstream needs none of the operator's (the
	// simulator).
	Credentials interface{ Missing() string }
	// StreamWriteTimeout bounds one write of a stream to a client that stopped reading.
	StreamWriteTimeout time.Duration
	// BodyReadTimeout bounds the time from a request's headers to the end of its body.
	BodyReadTimeout time.Duration
	// Observer observes every call the routes serve: its span, access line and metrics.
	Observer *observe.Observer
	// ResponseStore keeps the Responses API's stored responses, and Sealer seals their
	// reasoning into encrypted_content (docs/PROTOCOL.md 16); nil keeps none, seals none.
	ResponseStore *respstore.Store
	Sealer        *seal.Sealer
}

// serveFunc serves one route; an error it returns is answered by the route's surface. It
// sets call.Route when the route's metric name depends on the request (a stream), and
// call.Result as the core reports it.
type serveFunc func(w http.ResponseWriter, r *http.Request, call *observe.Call) error

// errorWriter answers a failure in a surface's own error shape.
type errorWriter func(w http.ResponseWriter, requestID string, f fault.Failure)

// surface is a REST surface: its metrics transport label and its error shape.
type surface struct {
	transport  string
	writeError errorWriter
	// anthropic: keys come in x-api-key too, and every answer has request-id
	// (docs/PROTOCOL.md 15).
	anthropic bool
}

var (
	nirmataSurface   = surface{transport: metrics.TransportREST, writeError: nirmata.WriteError}
	openaiSurface    = surface{transport: metrics.TransportOpenAI, writeError: openai.WriteError}
	anthropicSurface = surface{transport: metrics.TransportAnthropic, writeError: anthropic.WriteError, anthropic: true}
	// responsesSurface answers in OpenAI's error shape too, counted apart.
	responsesSurface = surface{transport: metrics.TransportResponses, writeError: openai.WriteError}
)

// NewHTTPHandler returns the REST API.
func NewHTTPHandler(svc *core.Service, opts Options) http.Handler {
	s := &httpServer{svc: svc, opts: opts}
	n := nirmata.NewHandler(svc, nirmata.Options{MaxBodyBytes: opts.MaxBodyBytes, StreamWriteTimeout: opts.StreamWriteTimeout})
	o := openai.NewHandler(svc, openai.Options{MaxBodyBytes: opts.MaxBodyBytes, StreamWriteTimeout: opts.StreamWriteTimeout})
	a := anthropic.NewHandler(svc, anthropic.Options{MaxBodyBytes: opts.MaxBodyBytes, StreamWriteTimeout: opts.StreamWriteTimeout})
	mux := http.NewServeMux()
	mux.Handle("POST /llm-apps/chat", s.route(nirmataSurface, metrics.RouteChat, true, n.Chat))
	for _, path := range []string{"/llm-apps/capabilities", "/capabilities"} {
		// Capability probes need no key (docs/PROTOCOL.md 2).
		mux.Handle("GET "+path, s.route(nirmataSurface, metrics.RouteCapabilities, false, n.Capabilities))
	}
	mux.Handle("POST /v1/chat/completions", s.route(openaiSurface, metrics.RouteChat, true, o.Chat))
	mux.Handle("POST /v1/messages", s.route(anthropicSurface, metrics.RouteChat, true, a.Messages))
	mux.Handle("POST /v1/messages/count_tokens", s.route(anthropicSurface, metrics.RouteCountTokens, true, a.CountTokens))
	// The models are listed in Anthropic's shape to a request of its API, in OpenAI's to
	// any other.
	mux.Handle("GET /v1/models", byVersion(s.route(anthropicSurface, metrics.RouteModels, true, a.Models),
		s.route(openaiSurface, metrics.RouteModels, true, o.Models)))
	mux.Handle("GET /v1/models/{id...}", byVersion(s.route(anthropicSurface, metrics.RouteModels, true, a.Model),
		s.route(openaiSurface, metrics.RouteModels, true, o.Model)))
	rs := responses.NewHandler(svc, responses.Options{MaxBodyBytes: opts.MaxBodyBytes, StreamWriteTimeout: opts.StreamWriteTimeout,
		Store: opts.ResponseStore, Sealer: opts.Sealer})
	mux.Handle("POST /v1/responses", s.route(responsesSurface, metrics.RouteChat, true, rs.Create))
	mux.Handle("GET /v1/responses/{id}", s.route(responsesSurface, metrics.RouteOther, true, rs.Get))
	mux.Handle("DELETE /v1/responses/{id}", s.route(responsesSurface, metrics.RouteOther, true, rs.Delete))
	mux.Handle("GET /v1/responses/{id}/input_items", s.route(responsesSurface, metrics.RouteOther, true, rs.InputItems))
	s.operations(mux)
	// Anything else: a JSON 404, or 405 on a known path, in the shape of the surface the
	// path is under, rather than net/http's text. Unknown paths need a key, so a stranger
	// learns nothing from probing them.
	openaiOther := s.route(openaiSurface, metrics.RouteOther, true, s.noRoute(mux))
	mux.Handle("/v1/", openaiOther)
	mux.Handle("/v1", openaiOther) // else ServeMux redirects it to /v1/
	anthropicOther := s.route(anthropicSurface, metrics.RouteOther, true, s.noRoute(mux))
	mux.Handle("/v1/messages/", anthropicOther)
	mux.Handle("/v1/messages", anthropicOther)
	other := s.route(nirmataSurface, metrics.RouteOther, true, s.noRoute(mux))
	mux.Handle("/", other)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux answers a path that is not canonical ("//", "/./", "/../") with a 301 to
		// the clean one, which turns a POST into a GET. The gateway serves no such path; it
		// answers in the shape of the surface the clean path is under.
		if p := r.URL.Path; !canonical(p) {
			switch surfaceOf(p).transport {
			case metrics.TransportAnthropic:
				anthropicOther.ServeHTTP(w, r)
			case metrics.TransportOpenAI, metrics.TransportResponses:
				openaiOther.ServeHTTP(w, r)
			default:
				other.ServeHTTP(w, r)
			}
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// NewAdminHandler returns what --admin-addr serves (docs/PROTOCOL.md 7): /healthz, /readyz
// and /metrics, as the REST API serves them, and api, the admin API, under /admin/
// (docs/PROTOCOL.md 17); any other path is net/http's 404.
func NewAdminHandler(svc *core.Service, opts Options, api http.Handler) http.Handler {
	s := &httpServer{svc: svc, opts: opts}
	mux := http.NewServeMux()
	s.operations(mux)
	mux.Handle("/admin/", api)
	return mux
}

// operations registers the routes an operator's probes and scraper read.
func (s *httpServer) operations(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.svc.Metrics().Handler())
}

// surfaceOf is the surface a path is under, by its clean form: Anthropic's for
// /v1/messages and below, the Responses API's for /v1/responses and below, OpenAI's for the
// rest of /v1, the Nirmata one for the rest.
func surfaceOf(p string) surface {
	switch c := path.Clean(p); {
	case c == "/v1/messages" || strings.HasPrefix(c, "/v1/messages/"):
		return anthropicSurface
	case c == "/v1/responses" || strings.HasPrefix(c, "/v1/responses/"):
		return responsesSurface
	case c == "/v1" || strings.HasPrefix(c, "/v1/"):
		return openaiSurface
	}
	return nirmataSurface
}

// byVersion serves a request that carries anthropic-version with versioned, any other
// with other.
func byVersion(versioned, other http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header[anthropicVersion]; ok {
			versioned.ServeHTTP(w, r)
			return
		}
		other.ServeHTTP(w, r)
	})
}

// anthropicVersion is the canonical key of the anthropic-version header.
var anthropicVersion = http.CanonicalHeaderKey(anthropic.HeaderVersion)

// canonical says path is its own path.Clean (a trailing slash aside).
func canonical(p string) bool {
	c := path.Clean(p)
	return c == p || c+"/" == p
}

type httpServer struct {
	svc  *core.Service
	opts Options
}

// route wraps a surface's handler in the middleware: request id (X-Request-Id), body
// deadline, server span (docs/PROTOCOL.md 14.6) when tracing is on, key check when
// needKey, panic recovery, error answers, and the call's access line and metrics once it
// has ended.
func (s *httpServer) route(sf surface, route string, needKey bool, serve serveFunc) http.Handler {
	writeError := sf.writeError
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := s.opts.Observer.Begin(sf.transport, route, r.Method, r.URL.Path)
		call.UserAgent, call.SessionID = r.Header.Get("User-Agent"), sessionID(r.Header)
		w.Header().Set("X-Request-Id", call.RequestID)
		if sf.anthropic {
			w.Header().Set(anthropic.HeaderRequestID, call.RequestID)
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		// The body must arrive within body_read_timeout, whoever reads it: a handler, or
		// net/http draining what a handler left. A handler that read its body lifts the
		// deadline (httpx.ReadBody), so a long call is not cut by it.
		_ = http.NewResponseController(w).SetReadDeadline(call.Start.Add(s.opts.BodyReadTimeout))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				f := call.Recovered("request", p)
				if !rec.wrote {
					writeError(rec, call.RequestID, f)
				}
			}
			call.Status = rec.status
			call.End()
		}()
		if route != metrics.RouteOther { // no spans for paths no route serves
			if ctx := call.Trace(r.Context(), r.Pattern, propagation.HeaderCarrier(r.Header)); ctx != r.Context() {
				r = r.WithContext(ctx) // a copy of the request, held for as long as the call: only with a span
			}
		}
		if keys := s.opts.Keys; needKey && keys.Enabled() {
			keyID, ok := checkKey(keys, sf, r.Header)
			if !ok {
				s.svc.Metrics().Rejected(metrics.RejectUnauthenticated)
				httpx.SkipBody(rec)
				s.fail(rec, r, call, fault.ErrUnauthenticated, writeError)
				return
			}
			call.KeyID = keyID
		}
		if err := serve(rec, r, call); err != nil {
			s.fail(rec, r, call, err, writeError)
		}
	})
}

// sessionHeaders are the headers agent clients name their session with, for the audit
// record: Claude Code's, Codex's, and a generic one.
var sessionHeaders = [...]string{"X-Claude-Code-Session-Id", "Session_id", "X-Session-Id"}

// sessionID is the call's session header; "" without one.
func sessionID(h http.Header) string {
	for _, name := range sessionHeaders {
		if v := h[name]; len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// checkKey checks the call's key: in Authorization, or, on Anthropic's surface, in
// x-api-key instead; a call may send one key only.
func checkKey(keys *auth.Keyring, sf surface, h http.Header) (keyID string, ok bool) {
	authorization := h.Values("Authorization")
	if apiKey := h.Values("X-Api-Key"); sf.anthropic && len(apiKey) > 0 {
		if len(authorization) > 0 {
			return "", false
		}
		return keys.CheckAPIKey(apiKey)
	}
	return keys.Check(authorization)
}

// fail answers err in the route's error shape.
func (s *httpServer) fail(w http.ResponseWriter, r *http.Request, call *observe.Call, err error, writeError errorWriter) {
	writeError(w, call.RequestID, call.Fail(r.Context(), err))
}

// catchAll are the patterns of paths no route serves.
var catchAll = map[string]bool{"/": true, "/v1/": true, "/v1": true, "/v1/messages/": true, "/v1/messages": true}

// noRoute answers a path no route serves: 405 when another method serves it, else 404.
func (s *httpServer) noRoute(mux *http.ServeMux) serveFunc {
	return func(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
		httpx.SkipBody(w)
		p := clip.String(r.URL.Path, clip.QuoteMax)
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			probe := &http.Request{Method: m, URL: r.URL, Host: r.Host}
			if _, pattern := mux.Handler(probe); m != r.Method && pattern != "" && !catchAll[pattern] && canonical(r.URL.Path) {
				w.Header().Set("Allow", m)
				return &fault.RouteError{Message: "method " + clip.String(r.Method, clip.QuoteMax) + " is not allowed on " + p, WrongMethod: true}
			}
		}
		return &fault.RouteError{Message: "no route for " + clip.String(r.Method, clip.QuoteMax) + " " + p}
	}
}

// readiness is /readyz's body (docs/PROTOCOL.md 7).
type readiness struct {
	Status string `json:"status"`
	// Reason says why the gateway is not ready, when the status alone does not.
	Reason   string `json:"reason,omitempty"`
	Upstream string `json:"upstream"`
	Store    string `json:"store"`
}

// readyz answers whether the gateway takes calls: 503 while draining, and while it has no
// AWS credentials. A shared store that does not answer is named but leaves the gateway
// ready (docs/PROTOCOL.md 14.3): it serves without it.
func (s *httpServer) readyz(w http.ResponseWriter, _ *http.Request) {
	r := readiness{Status: "ready", Upstream: s.opts.Upstream, Store: "memory"}
	if s.opts.Store != nil {
		r.Store = s.opts.Store.Status()
	}
	switch {
	case s.svc.Draining():
		r.Status = "draining"
	case s.opts.Credentials != nil:
		if r.Reason = s.opts.Credentials.Missing(); r.Reason != "" {
			r.Status = "not_ready"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Status != "ready" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	b, _ := json.Marshal(&r) // strings only: it cannot fail
	_, _ = w.Write(b)
}

// statusRecorder remembers the status for the access log. It unwraps, so
// http.ResponseController can still flush and set deadlines through it.
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
