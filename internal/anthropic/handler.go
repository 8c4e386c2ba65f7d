package anthropic

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/nirmata/llm-gateway/internal/bufpool"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// Options configures the Anthropic surface.
type Options struct {
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// StreamWriteTimeout cuts a stream whose client took no write for this long.
	StreamWriteTimeout time.Duration
}

// Handler serves Anthropic's Messages API on the chat core: POST /v1/messages, POST
// /v1/messages/count_tokens, and GET /v1/models and /v1/models/{id} in Anthropic's shape.
// The server's middleware has given the call its id, checked its key and set the body
// deadline; errors a method returns are answered by WriteError.
type Handler struct {
	svc  *core.Service
	opts Options
}

// NewHandler returns the surface's handler.
func NewHandler(svc *core.Service, opts Options) *Handler {
	return &Handler{svc: svc, opts: opts}
}

// Headers of the surface (docs/PROTOCOL.md 15).
const (
	// HeaderRequestID is Anthropic's name for the call's id, on every answer.
	HeaderRequestID = "Request-Id"
	// HeaderVersion marks a request of Anthropic's API; GET /v1/models answers in its shape
	// when it is there.
	HeaderVersion = "Anthropic-Version"
	// headerDropped lists what the gateway accepted without effect, as
	// X-Gateway-Ignored-Params does on every surface.
	headerDropped = "X-Gateway-Dropped"
	headerBeta    = "Anthropic-Beta"
	headerSession = "X-Claude-Code-Session-Id"
)

// Bounds of what the headers bring into a request.
const (
	maxBetas     = 32
	maxBetaBytes = 128
	maxSessionID = 256
)

// attrSessionID is the server span's attribute of Claude Code's session.
const attrSessionID = attribute.Key("gateway.session_id")

// pingEvery is how long a stream may write nothing before a ping goes out: Anthropic
// documents no interval, and 10 s keeps far inside the idle timeouts of proxies (60 s for
// many) while thinking or a tool input held for validation streams nothing.
const pingEvery = 10 * time.Second

// Messages serves POST /v1/messages: the message object, or with "stream": true its
// server-sent events.
func (h *Handler) Messages(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	nw := named(w)
	return httpx.Serve(nw, r, call, h.opts.StreamWriteTimeout, func() (*core.Stream, httpx.Frames, error) {
		return h.messages(nw, r, call)
	})
}

// named writes the call's answer with what the request had without effect named as its
// body named it, in x-gateway-ignored-params and x-gateway-dropped alike (docs/PROTOCOL.md
// 15.1); read tells it how.
func named(w http.ResponseWriter) *httpx.NamingWriter {
	return &httpx.NamingWriter{ResponseWriter: w, Also: headerDropped}
}

// read reads and decodes the body of a messages or count_tokens call, and completes its
// request with what the call's headers say.
func (h *Handler) read(w *httpx.NamingWriter, r *http.Request, call *observe.Call, count bool) (*call, error) {
	bp, body, err := httpx.ReadPooledBody(w, r, h.opts.MaxBodyBytes, h.svc.Metrics())
	if err != nil {
		return nil, err
	}
	c, err := decodeRequest(body, count)
	if err != nil {
		model, stream := chatjson.Named(body)
		bufpool.Put(bp, body)
		if stream && !count {
			call.Route = metrics.RouteChatStream
		}
		call.Result = h.svc.Named(model)
		return nil, err
	}
	bufpool.Put(bp, body) // the request copies what it keeps of the body
	w.Rename, w.Own = c.paths.anthropic, len(c.req.Ignored)
	req := c.req
	req.ID, req.KeyID, req.UserAgent = call.RequestID, call.KeyID, r.UserAgent()
	req.Betas = betas(r.Header.Values(headerBeta))
	if s := r.Header.Get(headerSession); s != "" {
		s = clip.String(s, maxSessionID)
		// Claude Code's session names its conversation: affinity and prompt-cache routing
		// key on it (docs/PROTOCOL.md 14.4).
		req.CacheKey = s
		trace.SpanFromContext(r.Context()).SetAttributes(attrSessionID.String(s))
	}
	return c, nil
}

// betas are the anthropic-beta values: comma-separated, in one header or several, at most
// maxBetas of at most maxBetaBytes each.
func betas(values []string) []string {
	var out []string
	for _, v := range values {
		for b := range strings.SplitSeq(v, ",") {
			if b = strings.TrimSpace(b); b != "" && len(out) < maxBetas {
				out = append(out, clip.String(b, maxBetaBytes))
			}
		}
	}
	return out
}

// messages answers a unary call, or opens the call's stream and returns it with its frames.
func (h *Handler) messages(w *httpx.NamingWriter, r *http.Request, call *observe.Call) (*core.Stream, httpx.Frames, error) {
	c, err := h.read(w, r, call, false)
	if err != nil {
		return nil, httpx.Frames{}, err
	}
	a := answer{id: "msg_" + call.RequestID, model: c.req.Model, stops: c.req.Stop}
	if a.model == "" {
		a.model = h.svc.DefaultModel()
	}
	if c.stream {
		call.Route = metrics.RouteChatStream
		st, res, err := h.svc.Stream(r.Context(), c.req)
		call.Result = res
		if err != nil {
			return nil, httpx.Frames{}, c.paths.rewrite(err)
		}
		w.Name(res.Ignored) // also on a failure before the first event, answered by the middleware
		// Server-sent events (docs/PROTOCOL.md 15.3). A failure before the first event is
		// answered with its status, so clients retry it; after it, with an error event.
		s := &streamer{answer: a}
		return st, httpx.Frames{ContentType: "text/event-stream", Event: s.appendEvent,
			Error: func(dst []byte, f fault.Failure) []byte { return appendErrorEvent(dst, errorOf(f, call.RequestID)) },
			Ping:  appendPing, PingEvery: pingEvery, WaitFirst: true}, nil
	}
	resp, res, err := h.svc.Chat(r.Context(), c.req)
	call.Result = res
	if err != nil {
		return nil, httpx.Frames{}, c.paths.rewrite(err)
	}
	bp := bufpool.Get()
	b := a.appendMessage(*bp, resp)
	hdr := w.Header()
	httpx.SetCallHeaders(hdr, res)
	hdr["Content-Type"] = []string{"application/json"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b)
	bufpool.Put(bp, b)
	return nil, httpx.Frames{}, nil
}

func appendPing(dst []byte) []byte { return append(dst, pingFrame...) }

// modelObject is one model of GET /v1/models in Anthropic's shape.
type modelObject struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

type modelList struct {
	Data    []modelObject `json:"data"`
	HasMore bool          `json:"has_more"`
	FirstID *string       `json:"first_id"`
	LastID  *string       `json:"last_id"`
}

func (h *Handler) modelObject(m core.ModelEntry) modelObject {
	return modelObject{Type: "model", ID: m.Name, DisplayName: m.Name, CreatedAt: h.svc.Started().UTC().Format(time.RFC3339)}
}

// Models serves GET /v1/models in Anthropic's shape: the configured aliases, then the
// default model, on one page.
func (h *Handler) Models(w http.ResponseWriter, _ *http.Request, _ *observe.Call) error {
	models := h.svc.Models()
	out := modelList{Data: make([]modelObject, len(models))}
	for i, m := range models {
		out.Data[i] = h.modelObject(m)
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = &out.Data[0].ID, &out.Data[n-1].ID
	}
	writeJSON(w, &out)
	return nil
}

// Model serves GET /v1/models/{id} in Anthropic's shape; the id may hold ":" and "/".
func (h *Handler) Model(w http.ResponseWriter, r *http.Request, _ *observe.Call) error {
	m, err := h.svc.Model(r.PathValue("id"))
	if err != nil {
		return err
	}
	out := h.modelObject(m)
	writeJSON(w, &out)
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(chatjson.Append(nil, v))
}

// errorTypes are each Kind's HTTP status and Anthropic error type
// (https://docs.anthropic.com/en/api/errors, docs/PROTOCOL.md 15.5). The gateway has no
// cause for permission_error (403): a key it does not know is authentication_error.
var errorTypes = [fault.Kinds]struct {
	status int
	typ    string
}{
	fault.KindInternal:        {http.StatusInternalServerError, "api_error"},
	fault.KindInvalid:         {http.StatusBadRequest, "invalid_request_error"},
	fault.KindUnauthenticated: {http.StatusUnauthorized, "authentication_error"},
	fault.KindNotFound:        {http.StatusNotFound, "not_found_error"},
	fault.KindTooLarge:        {http.StatusRequestEntityTooLarge, "request_too_large"},
	fault.KindBodyTimeout:     {http.StatusRequestTimeout, "invalid_request_error"},
	fault.KindRateLimited:     {http.StatusTooManyRequests, "rate_limit_error"},
	fault.KindTimeout:         {http.StatusGatewayTimeout, "api_error"},
	// Bedrock unavailable, the gateway at its concurrency limit or draining: Anthropic's
	// "overloaded", which its clients retry.
	fault.KindUnavailable:     {statusOverloaded, "overloaded_error"},
	fault.KindUpstream:        {http.StatusBadGateway, "api_error"},
	fault.KindCredentials:     {http.StatusBadGateway, "api_error"},
	fault.KindNoCredentials:   {http.StatusServiceUnavailable, "api_error"},
	fault.KindCanceled:        {499, "invalid_request_error"},
	fault.KindWrongMethod:     {http.StatusMethodNotAllowed, "invalid_request_error"},
	fault.KindURITooLong:      {http.StatusRequestURITooLong, "invalid_request_error"},
	fault.KindHeadersTooLarge: {http.StatusRequestHeaderFieldsTooLarge, "invalid_request_error"},
}

// statusOverloaded is Anthropic's status for an overloaded API.
const statusOverloaded = 529

// unauthenticated is the message of a call without a valid key, naming this surface's
// headers.
const unauthenticated = "missing or invalid API key: send x-api-key: <key> or Authorization: Bearer <key>"

// errorOf is a failure in Anthropic's error shape.
func errorOf(f fault.Failure, requestID string) *errorBody {
	msg := f.Message
	if f.Kind == fault.KindUnauthenticated {
		msg = unauthenticated
	}
	return &errorBody{Type: "error", Error: errorDetail{Type: errorTypes[f.Kind].typ, Message: msg}, RequestID: requestID}
}

// WriteError answers a failed call with Anthropic's error body and status, request-id,
// retry-after when a retry may succeed, and x-should-retry: false when the SDKs' automatic
// retry cannot help.
func WriteError(w http.ResponseWriter, requestID string, f fault.Failure) {
	h := w.Header()
	h.Set(HeaderRequestID, requestID)
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds())))
	}
	switch f.Kind {
	case fault.KindTooLarge, fault.KindURITooLong, fault.KindHeadersTooLarge, fault.KindCredentials, fault.KindInternal:
		h.Set("X-Should-Retry", "false")
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(errorTypes[f.Kind].status)
	_, _ = w.Write(chatjson.Append(nil, errorOf(f, requestID)))
}
