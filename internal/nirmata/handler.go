package nirmata

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/nirmata/llm-gateway/internal/bufpool"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// Options configures the Nirmata REST surface.
type Options struct {
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// StreamWriteTimeout cuts a stream whose client took no write for this long.
	StreamWriteTimeout time.Duration
}

// Handler serves the Nirmata REST surface on the chat core: POST /llm-apps/chat and the
// capabilities endpoints. The server's middleware has given the call its id, checked its
// key and set the body deadline; errors a method returns are answered by WriteError.
type Handler struct {
	svc  *core.Service
	opts Options
}

// NewHandler returns the surface's handler.
func NewHandler(svc *core.Service, opts Options) *Handler {
	return &Handler{svc: svc, opts: opts}
}

// Chat serves POST /llm-apps/chat: the unary answer, or with stream=true the JSONL delta
// stream, with chunked=true the Nirmata chunked events.
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
	req, stream, err := DecodeRequest(body)
	bufpool.Put(bp, body) // the request copies what it keeps of the body
	if err != nil {
		return nil, httpx.Frames{}, err
	}
	chunked := false
	if r.URL.RawQuery != "" {
		if stream, chunked, err = applyQuery(req, r.URL.Query(), stream); err != nil {
			return nil, httpx.Frames{}, err
		}
	}
	req.ID, req.KeyID, req.UserAgent = call.RequestID, call.KeyID, r.UserAgent()
	if stream || chunked {
		call.Route = metrics.RouteChatStream
		st, res, err := h.svc.Stream(r.Context(), req)
		call.Result = res
		if err != nil {
			return nil, httpx.Frames{}, err
		}
		return st, frames(call.RequestID, chunked, req.StreamReasoning), nil
	}
	resp, res, err := h.svc.Chat(r.Context(), req)
	call.Result = res
	if err != nil {
		return nil, httpx.Frames{}, err
	}
	bp = bufpool.Get()
	b := AppendResponse(*bp, resp)
	hdr := w.Header()
	httpx.SetCallHeaders(hdr, res)
	hdr["Content-Type"] = []string{"application/json"}
	// Not left to net/http, which counts only answers that fit its 2 KiB buffer and
	// chunks the rest.
	hdr["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b) // copied into the connection's buffer or written: b is free after
	bufpool.Put(bp, b)
	return nil, httpx.Frames{}, nil
}

// applyQuery folds the query parameters of POST /llm-apps/chat into the request: model
// (when the body names none), provider, client_type, stream, chunked and reasoning (the
// JSONL stream's reasoning lines).
func applyQuery(req *chat.Request, q url.Values, stream bool) (bool, bool, error) {
	if req.Model == "" {
		req.Model = q.Get("model")
	}
	req.Provider = q.Get("provider")
	req.ClientType = q.Get("client_type")
	chunked := false
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"stream", &stream}, {"chunked", &chunked}, {"reasoning", &req.StreamReasoning}} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, false, fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue,
				"query parameter %s=%s: want true or false", f.name, clip.Quote(v)).At(f.name)
		}
		*f.dst = *f.dst || b
	}
	return stream, chunked, nil
}

// frames are the JSONL delta stream (docs/PROTOCOL.md 3.2), its reasoning lines with
// reasoning, or with chunked the Nirmata chunked events (3.3). A failure after the 200 is
// the stream's last line.
func frames(requestID string, chunked, reasoning bool) httpx.Frames {
	lines := &lineWriter{}
	f := httpx.Frames{ContentType: "application/x-ndjson", Event: lines.line,
		Error: func(dst []byte, f fault.Failure) []byte { return AppendErrorLine(dst, f.Kind.Code(), f.Message) }}
	if reasoning {
		f.Event = lines.reasoningLine
	}
	if chunked {
		c := NewChunker(requestID)
		f.Event = c.Append
		f.Error = func(dst []byte, f fault.Failure) []byte { return c.AppendError(dst, f.Kind.Code(), f.Message) }
	}
	return f
}

// WriteError answers a failed call with the JSON error body of docs/PROTOCOL.md 5.
func WriteError(w http.ResponseWriter, requestID string, f fault.Failure) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds())))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpx.Status(f.Kind))
	_, _ = w.Write(AppendError(nil, f.Message, f.Kind.Code(), requestID, f.Limit))
}

// Capabilities serves GET /llm-apps/capabilities and GET /capabilities, ?model= optional.
func (h *Handler) Capabilities(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	c, err := h.svc.Capabilities(r.URL.Query().Get("model"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(appendJSON(nil, c))
	return nil
}
