package openai

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nirmata/llm-gateway/internal/bufpool"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// Options configures the OpenAI surface.
type Options struct {
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// StreamWriteTimeout cuts a stream whose client took no write for this long.
	StreamWriteTimeout time.Duration
}

// Handler serves OpenAI's Chat Completions API on the chat core: POST
// /v1/chat/completions, GET /v1/models and GET /v1/models/{id}. The server's middleware
// has given the call its id, checked its key and set the body deadline; errors a method
// returns are answered by WriteError.
type Handler struct {
	svc  *core.Service
	opts Options
}

// NewHandler returns the surface's handler.
func NewHandler(svc *core.Service, opts Options) *Handler {
	return &Handler{svc: svc, opts: opts}
}

// Chat serves POST /v1/chat/completions: the unary answer, or with "stream": true the SSE
// stream.
func (h *Handler) Chat(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	return httpx.Serve(w, r, call, h.opts.StreamWriteTimeout, func() (*core.Stream, httpx.Frames, error) {
		return h.chat(w, r, call)
	})
}

// chat answers a unary call, or opens the call's stream and returns it with its frames.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request, call *observe.Call) (*core.Stream, httpx.Frames, error) {
	bp, body, err := httpx.ReadPooledBody(w, r, h.opts.MaxBodyBytes, h.svc.Metrics())
	if err != nil {
		return nil, httpx.Frames{}, err
	}
	c, err := decodeRequest(body)
	if err != nil {
		model, stream := chatjson.Named(body)
		bufpool.Put(bp, body)
		if stream {
			call.Route = metrics.RouteChatStream
		}
		call.Result = h.svc.Named(model)
		return nil, httpx.Frames{}, err
	}
	bufpool.Put(bp, body) // the request copies what it keeps of the body
	c.req.ID, c.req.KeyID, c.req.UserAgent = call.RequestID, call.KeyID, r.UserAgent()
	hd := head{ID: "chatcmpl-" + call.RequestID, Created: time.Now().Unix(), Model: c.req.Model}
	if hd.Model == "" {
		hd.Model = h.svc.DefaultModel()
	}
	if c.stream {
		call.Route = metrics.RouteChatStream
		st, res, err := h.svc.Stream(r.Context(), c.req)
		call.Result = res
		if err != nil {
			return nil, httpx.Frames{}, err
		}
		// Server-sent events (docs/PROTOCOL.md 10.3). A failure before the first event is
		// answered with its status; after it, with one error event, and the stream ends
		// without [DONE], so the client knows the answer is incomplete.
		ch := newChunker(hd, c.includeUsage)
		return st, httpx.Frames{ContentType: "text/event-stream", Event: ch.appendEvent,
			Error: func(dst []byte, f fault.Failure) []byte { return appendErrorEvent(dst, errorOf(f)) }, WaitFirst: true}, nil
	}
	resp, res, err := h.svc.Chat(r.Context(), c.req)
	call.Result = res
	if err != nil {
		return nil, httpx.Frames{}, err
	}
	bp = bufpool.Get()
	b := appendCompletion(*bp, hd, resp)
	hdr := w.Header()
	httpx.SetCallHeaders(hdr, res)
	hdr["Content-Type"] = []string{"application/json"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b)
	bufpool.Put(bp, b)
	return nil, httpx.Frames{}, nil
}

// modelObject is one model of GET /v1/models (docs/PROTOCOL.md 10.4).
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelList struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

func (h *Handler) modelObject(m core.ModelEntry) modelObject {
	return modelObject{ID: m.Name, Object: "model", Created: h.svc.Started().Unix(), OwnedBy: ownerOf(m.ID)}
}

// Models serves GET /v1/models: the configured aliases, then the default model.
func (h *Handler) Models(w http.ResponseWriter, _ *http.Request, _ *observe.Call) error {
	models := h.svc.Models()
	out := modelList{Object: "list", Data: make([]modelObject, len(models))}
	for i, m := range models {
		out.Data[i] = h.modelObject(m)
	}
	writeJSON(w, &out)
	return nil
}

// Model serves GET /v1/models/{id}; the id may hold ":" and "/".
func (h *Handler) Model(w http.ResponseWriter, r *http.Request, _ *observe.Call) error {
	m, err := h.svc.Model(r.PathValue("id"))
	if err != nil {
		return err
	}
	out := h.modelObject(m)
	writeJSON(w, &out)
	return nil
}

// ownerOf is the provider of a Bedrock model id: the first segment of its family
// ("anthropic" of "us.anthropic.claude-sonnet-4-20250514-v1:0", and of an inference
// profile's ARN), else "bedrock" (a name of no known shape).
func ownerOf(id string) string {
	provider, _, ok := strings.Cut(capabilities.FamilyOf(id), ".")
	if !ok || provider == "" {
		return "bedrock"
	}
	return provider
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(appendJSON(nil, v))
}

// errorTypes are each Kind's OpenAI error type and default code (docs/PROTOCOL.md 10.5).
var errorTypes = [fault.Kinds]struct{ typ, code string }{
	fault.KindInternal:        {"server_error", "internal_error"},
	fault.KindInvalid:         {"invalid_request_error", "invalid_value"},
	fault.KindUnauthenticated: {"authentication_error", "invalid_api_key"},
	fault.KindNotFound:        {"invalid_request_error", ""},
	fault.KindTooLarge:        {"invalid_request_error", "request_too_large"},
	fault.KindBodyTimeout:     {"invalid_request_error", "request_timeout"},
	fault.KindRateLimited:     {"rate_limit_error", "rate_limit_exceeded"},
	fault.KindTimeout:         {"timeout", "timeout"},
	fault.KindUnavailable:     {"server_error", "service_unavailable"},
	fault.KindUpstream:        {"server_error", "upstream_error"},
	fault.KindCredentials:     {"server_error", "upstream_error"},
	fault.KindNoCredentials:   {"server_error", "upstream_credentials_missing"},
	fault.KindCanceled:        {"invalid_request_error", "canceled"},
	fault.KindWrongMethod:     {"invalid_request_error", "method_not_allowed"},
	fault.KindURITooLong:      {"invalid_request_error", "uri_too_long"},
	fault.KindHeadersTooLarge: {"invalid_request_error", "headers_too_large"},
}

// ErrorCode is the code OpenAI's error shape gives f: its reason, else its Kind's own
// code; "" when there is neither. The Responses API's failed stream carries it too.
func ErrorCode(f fault.Failure) string {
	if f.Reason != "" {
		return f.Reason
	}
	return errorTypes[f.Kind].code
}

// errorOf is a failure in OpenAI's error shape.
func errorOf(f fault.Failure) *errorBody {
	d := errorDetail{Message: f.Message, Type: errorTypes[f.Kind].typ}
	if code := ErrorCode(f); code != "" {
		d.Code = &code
	}
	if f.Param != "" {
		d.Param = &f.Param
	}
	return &errorBody{Error: d}
}

// noRetryAbove is the longest Retry-After after which OpenAI's SDKs are told not to retry.
const noRetryAbove = 60 * time.Second

// WriteError answers a failed call with OpenAI's error body, Retry-After when a retry may
// succeed, and x-should-retry: false when the SDKs' automatic retry cannot help.
func WriteError(w http.ResponseWriter, _ string, f fault.Failure) {
	h := w.Header()
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds())))
	}
	switch f.Kind {
	case fault.KindTooLarge, fault.KindURITooLong, fault.KindHeadersTooLarge, fault.KindCredentials, fault.KindInternal:
		h.Set("X-Should-Retry", "false")
	default:
		if f.RetryAfter > noRetryAbove {
			h.Set("X-Should-Retry", "false")
		}
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(httpx.Status(f.Kind))
	_, _ = w.Write(appendJSON(nil, errorOf(f)))
}
