// Package responses serves OpenAI's Responses API (docs/PROTOCOL.md 16) on the chat core,
// the wire Codex CLI and the OpenAI Agents SDKs speak: its input items and tools decoded
// into the chat model, the answer encoded as a response object or its stream of events.
// Errors are OpenAI's, answered by openai.WriteError.
//
// Responses are stored (store: true) in a respstore.Store, readable, chainable and
// deletable by their key alone; reasoning is sealed into encrypted_content by a
// seal.Sealer and opened when sent back (stored.go).
package responses

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nirmata/llm-gateway/internal/bufpool"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/httpx"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
	"github.com/nirmata/llm-gateway/internal/respstore"
	"github.com/nirmata/llm-gateway/internal/seal"
)

// Options configures the Responses surface.
type Options struct {
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// StreamWriteTimeout cuts a stream whose client took no write for this long.
	StreamWriteTimeout time.Duration
	// Store keeps the responses of store: true; nil keeps none.
	Store *respstore.Store
	// Sealer seals reasoning into encrypted_content; nil seals none and opens none.
	Sealer *seal.Sealer
}

// Handler serves OpenAI's Responses API: POST /v1/responses, and the routes of stored
// responses. The server's middleware has given the call its id, checked its key and set
// the body deadline; errors a method returns are answered by openai.WriteError.
type Handler struct {
	svc  *core.Service
	opts Options
}

// NewHandler returns the surface's handler.
func NewHandler(svc *core.Service, opts Options) *Handler {
	return &Handler{svc: svc, opts: opts}
}

// HeaderDropped lists the hosted tools a request named that were left out, by their paths
// (tools[3]).
const HeaderDropped = "X-Gateway-Dropped"

// HeaderNotStored says why a response of store: true was answered but not stored:
// too_large (responses_max_bytes), key_limit (responses_key_max_bytes) or
// store_unavailable. A stream's response.completed says "store": false instead.
const HeaderNotStored = "X-Gateway-Not-Stored"

// state is the call's state for decoding and answering.
func (h *Handler) state(r *http.Request, call *observe.Call) *state {
	return &state{ctx: r.Context(), keyID: call.KeyID, store: h.opts.Store, sealer: h.opts.Sealer, foundation: h.svc.Foundation}
}

// Create serves POST /v1/responses: the response object, or with "stream": true its SSE
// stream.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	nw := &httpx.NamingWriter{ResponseWriter: w}
	return httpx.Serve(nw, r, call, h.opts.StreamWriteTimeout, func() (*core.Stream, httpx.Frames, error) {
		return h.create(nw, r, call)
	})
}

// create answers a unary call, or opens the call's stream and returns it with its frames.
func (h *Handler) create(w *httpx.NamingWriter, r *http.Request, call *observe.Call) (*core.Stream, httpx.Frames, error) {
	bp, body, err := httpx.ReadPooledBody(w, r, h.opts.MaxBodyBytes, h.svc.Metrics())
	if err != nil {
		return nil, httpx.Frames{}, err
	}
	c, err := decodeRequest(body, h.state(r, call))
	if err != nil {
		model, stream := chatjson.Named(body)
		bufpool.Put(bp, body)
		if stream {
			call.Route = metrics.RouteChatStream
		}
		call.Result = h.svc.Named(model)
		return nil, httpx.Frames{}, err
	}
	bufpool.Put(bp, body) // the call copies what it keeps of the body
	w.Rename, w.Own = c.paths.rewrite, len(c.req.Ignored)
	c.req.ID, c.req.KeyID, c.req.UserAgent = call.RequestID, call.KeyID, r.UserAgent()
	hd := head{requestID: call.RequestID, createdAt: time.Now().Unix(), model: c.req.Model}
	if hd.model == "" {
		hd.model = h.svc.DefaultModel()
	}
	if len(c.dropped) > 0 {
		w.Header().Set(HeaderDropped, strings.Join(c.dropped, ","))
	}
	if c.stream {
		call.Route = metrics.RouteChatStream
		st, res, err := h.svc.Stream(r.Context(), c.req)
		call.Result = res
		if err != nil {
			return nil, httpx.Frames{}, c.named(err)
		}
		// A failure before the first event is answered with its status; after it, with
		// response.failed, the stream's last event.
		s := c.streamer(hd, res.Model)
		return st, httpx.Frames{ContentType: "text/event-stream", Event: s.appendEvent, Error: s.appendError, WaitFirst: true}, nil
	}
	resp, res, err := h.svc.Chat(r.Context(), c.req)
	call.Result = res
	if err != nil {
		return nil, httpx.Frames{}, c.named(err)
	}
	hdr := w.Header()
	rsp := c.answer(&hd, resp)
	var b []byte
	if rsp.Store {
		var notStored string
		if b, notStored = c.save(&rsp); notStored != "" {
			hdr.Set(HeaderNotStored, notStored)
		}
	}
	httpx.SetCallHeaders(hdr, res)
	if b != nil { // the stored response, as it is answered
		writeJSON(w, b)
		return nil, httpx.Frames{}, nil
	}
	bp = bufpool.Get()
	b = chatjson.Append(*bp, &rsp)
	writeJSON(w, b)
	bufpool.Put(bp, b)
	return nil, httpx.Frames{}, nil
}

// Get serves GET /v1/responses/{id}: the response as it was answered, to the key that
// created it.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	rec, err := h.state(r, call).load(r.PathValue("id"), "")
	if err != nil {
		return err
	}
	writeJSON(w, rec.Response)
	return nil
}

// Delete serves DELETE /v1/responses/{id}, for the key that created it.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	st, id := h.state(r, call), r.PathValue("id")
	if h.opts.Store == nil {
		return responseNotFound("", id)
	}
	switch err := h.opts.Store.Delete(st.ctx, st.keyID, id); {
	case errors.Is(err, respstore.ErrNotFound):
		return responseNotFound("", id)
	case err != nil:
		return &unavailableError{}
	}
	writeJSON(w, chatjson.Append(nil, &deleted{ID: id, Object: "response.deleted", Deleted: true}))
	return nil
}

type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// InputItems serves GET /v1/responses/{id}/input_items: the items of the conversation the
// response answered, as OpenAI lists them (limit 1 to 100, default 20; order desc, the
// default, or asc; after an item's id).
func (h *Handler) InputItems(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	q := r.URL.Query()
	page, err := pageOf(q.Get("limit"), q.Get("order"), q.Get("after"))
	if err != nil {
		return err
	}
	rec, err := h.state(r, call).load(r.PathValue("id"), "")
	if err != nil {
		return err
	}
	writeJSON(w, page.list(rec.Input, r.PathValue("id")))
	return nil
}

func writeJSON(w http.ResponseWriter, b []byte) {
	hdr := w.Header()
	hdr["Content-Type"] = []string{"application/json"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b)
}
