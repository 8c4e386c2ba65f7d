package nirmata

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/nirmata/llm-gateway/internal/bufpool"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/httpx"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/translate"
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
func (h *Handler) Chat(w http.ResponseWriter, r *http.Request, call *core.Call) error {
	bp, body, err := httpx.ReadPooledBody(w, r, h.opts.MaxBodyBytes, h.svc.Metrics())
	if err != nil {
		return err
	}
	req, stream, err := DecodeRequest(body)
	bufpool.Put(bp, body) // the request copies what it keeps of the body
	if err != nil {
		return core.InvalidBody(err)
	}
	chunked := false
	if r.URL.RawQuery != "" {
		if stream, chunked, err = applyQuery(req, r.URL.Query(), stream); err != nil {
			return err
		}
	}
	req.ID, req.KeyID = call.RequestID, call.KeyID
	if stream || chunked {
		call.Route = metrics.RouteChatStream
		st, res, err := h.svc.Stream(r.Context(), req)
		call.Result = res
		if err != nil {
			return err
		}
		defer st.Close()
		httpx.SetStreamHeaders(w.Header(), res)
		h.stream(w, r, st, chunked, req.StreamReasoning, call)
		call.Result = st.Result()
		httpx.SetStreamTrailers(w.Header(), call.Result)
		return nil
	}
	resp, res, err := h.svc.Chat(r.Context(), req)
	call.Result = res
	if err != nil {
		return err
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
	return nil
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
			return false, false, fmt.Errorf("%w: query parameter %s=%s: want true or false", translate.ErrInvalidRequest, f.name, clip.Quote(v))
		}
		*f.dst = *f.dst || b
	}
	return stream, chunked, nil
}

// stream answers with the JSONL delta stream (docs/PROTOCOL.md 3.2) or, with chunked, the
// Nirmata chunked events (3.3): each upstream event's lines are written and flushed as it
// arrives. The client going away cancels the request context, which cancels the upstream
// call. A failure after the 200 is the stream's last line.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, st *core.Stream, chunked, reasoning bool, call *core.Call) {
	lines := &lineWriter{}
	encode, encodeError := lines.line, AppendErrorLine
	if reasoning {
		encode = lines.reasoningLine
	}
	if chunked {
		c := NewChunker(call.RequestID)
		encode, encodeError = c.Append, c.AppendError
	}
	out := httpx.StartStream(w, "application/x-ndjson", h.opts.StreamWriteTimeout)
	defer out.End()
	defer func() {
		// A bug after the first byte still ends the stream the way the contract says.
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			f := h.svc.Panicked(call, "stream", p)
			_ = out.Write(encodeError(nil, call.Code, f.Message))
		}
	}()
	var (
		events []chat.Event
		buf    []byte
		err    error
	)
	for {
		events, err = st.Next(events[:0])
		buf = buf[:0]
		for i := range events {
			buf = encode(buf, &events[i])
		}
		if err != nil && err != io.EOF {
			f := h.svc.Fail(r.Context(), call, err)
			buf = encodeError(buf, call.Code, f.Message)
		}
		if werr := out.Write(buf); werr != nil {
			call.Code = httpx.WriteFailed(werr)
			return
		}
		if err != nil {
			return
		}
	}
}

// WriteError answers a failed call with the JSON error body of docs/PROTOCOL.md 5.
func WriteError(w http.ResponseWriter, requestID string, f core.Failure) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds())))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Kind.HTTPStatus())
	_, _ = w.Write(AppendError(nil, f.Message, f.Kind.CodeName(), requestID, f.Limit))
}

// capabilities is the answer of GET /llm-apps/capabilities (docs/PROTOCOL.md 4): every
// key present, lists [] rather than null when empty.
type capabilities struct {
	ToolsSupported   bool                `json:"tools_supported"`
	ToolTypes        []string            `json:"tool_types"`
	StreamingTools   bool                `json:"streaming_tools"`
	MaxTools         int                 `json:"max_tools"`
	StreamingFormats []string            `json:"streaming_formats"`
	ToolChoice       []string            `json:"tool_choice"`
	DefaultModel     string              `json:"default_model"`
	Surfaces         []string            `json:"surfaces"`
	Models           []modelCapabilities `json:"models"`
	// The asked model's flags, with ?model= only.
	*flags `json:",inline"`
}

type modelCapabilities struct {
	ID             string   `json:"id"`
	Tools          bool     `json:"tools"`
	StreamingTools bool     `json:"streaming_tools"`
	ToolChoice     []string `json:"tool_choice"`
	flags          `json:",inline"`
}

// flags are a model's flags after tool_choice (docs/PROTOCOL.md 4).
type flags struct {
	Reasoning        bool `json:"reasoning"`
	PromptCaching    bool `json:"prompt_caching"`
	StrictTools      bool `json:"strict_tools"`
	StructuredOutput bool `json:"structured_output"`
	Images           bool `json:"images"`
	Documents        bool `json:"documents"`
}

func flagsOf(f core.Flags) flags {
	return flags{Reasoning: f.Reasoning, PromptCaching: f.PromptCaching, StrictTools: f.StrictTools,
		StructuredOutput: f.StructuredOutput, Images: f.Images, Documents: f.Documents}
}

// StreamingFormats are the stream formats this surface serves.
var StreamingFormats = []string{"jsonl", "chunked"}

// Capabilities serves GET /llm-apps/capabilities and GET /capabilities, ?model= optional.
func (h *Handler) Capabilities(w http.ResponseWriter, r *http.Request, call *core.Call) error {
	c, err := h.svc.Capabilities(r.URL.Query().Get("model"))
	if err != nil {
		return err
	}
	out := capabilities{
		ToolsSupported:   c.ToolsSupported,
		ToolTypes:        c.ToolTypes,
		StreamingTools:   c.StreamingTools,
		MaxTools:         c.MaxTools,
		StreamingFormats: StreamingFormats,
		ToolChoice:       c.ToolChoice,
		DefaultModel:     c.DefaultModel,
		Surfaces:         c.Surfaces,
		Models:           make([]modelCapabilities, len(c.Models)),
	}
	for i, m := range c.Models { // nil lists encode as []
		out.Models[i] = modelCapabilities{ID: m.ID, Tools: m.Tools, StreamingTools: m.StreamingTools, ToolChoice: m.ToolChoice, flags: flagsOf(m.Flags)}
	}
	if c.ModelFlags != nil {
		f := flagsOf(*c.ModelFlags)
		out.flags = &f
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(appendJSON(nil, &out))
	return nil
}
