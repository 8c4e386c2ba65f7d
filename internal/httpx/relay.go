package httpx

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// Frames is how a REST surface writes a stream: its content type and its frames. It is all
// of a stream a surface declares; Serve does the rest.
type Frames struct {
	ContentType string
	// Event appends the frames of one chat event; Error the frame of a failure after the
	// stream started, the last one the client gets.
	Event func(dst []byte, ev *chat.Event) []byte
	Error func(dst []byte, f fault.Failure) []byte
	// WaitFirst: nothing is written before the first event, so a failure before it is
	// answered with its status (Relay returns it), as a unary call's would be.
	WaitFirst bool
}

// Prepare reads and decodes a chat request, then either answers it whole (a unary call: it
// returns no stream) or opens its stream and returns it with the frames it is written in.
type Prepare func() (*core.Stream, Frames, error)

// Serve serves a REST surface's chat call: it runs prepare, and relays the stream prepare
// opened, if any: the status and headers of what the core did, then each upstream event's
// frames written and flushed as they come, each write bounded by writeTimeout (a client
// that stops reading is cut, which ends the upstream call). A failure after the first byte
// is the stream's last frame; a bug after it still ends the stream the way the contract
// says. Once the stream is over, the call has its Result and the headers declared as
// trailers are set. With Frames.WaitFirst a failure before the first event is returned, to
// be answered with its status, as a unary call's would be.
//
// prepare, and the stream's start (the first event when waited for, the status and
// headers), run on a goroutine of their own, which Serve waits for; the connection's
// goroutine relays the stream for as long as it lasts. A goroutine's stack keeps the size
// its deepest call once needed for as long as the goroutine is that busy, and decoding and
// translating a request take 16 KiB of stack (the JSON decoder's recursion alone some
// 9 KiB), net/http's first write of an answer 4 KiB more than the writes after it, the
// relay itself under 8 KiB: so each open stream holds an 8 KiB stack, not 16
// (docs/PERFORMANCE.md, memory per open stream). A panic in prepare is logged with its
// stack there and answered as the route answers any failure.
func Serve(w http.ResponseWriter, r *http.Request, call *observe.Call, writeTimeout time.Duration, prepare Prepare) error {
	sv := serving{w: w, call: call, prepare: prepare, timeout: writeTimeout}
	sv.wg.Add(1)
	go sv.begin()
	sv.wg.Wait()
	if sv.abort {
		panic(http.ErrAbortHandler)
	}
	if sv.st == nil {
		return sv.err
	}
	defer sv.st.Close()
	defer func() {
		call.Result = sv.st.Result()
		SetStreamTrailers(w.Header(), call.Result)
	}()
	if sv.out == nil { // a failure before the first event, or a panic in begin
		return sv.err
	}
	defer sv.out.End()
	sv.relay(r.Context())
	return nil
}

// serving is one chat call of Serve.
type serving struct {
	w       http.ResponseWriter
	call    *observe.Call
	prepare Prepare
	timeout time.Duration
	wg      sync.WaitGroup
	// abort: begin panicked with http.ErrAbortHandler, which Serve panics with again.
	abort bool

	st     *core.Stream
	frames Frames
	// out writes the stream once it started; events and err are what the wait for the
	// first event got, when it was waited for.
	out    *StreamWriter
	events []chat.Event
	err    error
}

// begin prepares the call and starts its stream, if any, on its own goroutine (Serve).
func (sv *serving) begin() {
	defer sv.wg.Done()
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				sv.abort = true
				return
			}
			sv.err = recovered{sv.call.Recovered("request", p)}
		}
	}()
	sv.st, sv.frames, sv.err = sv.prepare()
	if sv.st == nil {
		return
	}
	for sv.frames.WaitFirst && len(sv.events) == 0 && sv.err == nil {
		sv.events, sv.err = sv.st.Next(sv.events[:0])
	}
	if sv.frames.WaitFirst && len(sv.events) == 0 && sv.err != io.EOF {
		return
	}
	SetStreamHeaders(sv.w.Header(), sv.st.Result())
	sv.out = StartStream(sv.w, sv.frames.ContentType, sv.timeout)
}

// relay writes the stream's events as they come, until it ends or the client is gone.
func (sv *serving) relay(ctx context.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			_ = sv.out.Write(sv.frames.Error(nil, sv.call.Recovered("stream", p)))
		}
	}()
	events, err := sv.events, sv.err
	var buf []byte
	for started := sv.frames.WaitFirst; ; started = false {
		if !started {
			events, err = sv.st.Next(events[:0])
		}
		buf = buf[:0]
		for i := range events {
			buf = sv.frames.Event(buf, &events[i])
		}
		if err != nil && err != io.EOF {
			buf = sv.frames.Error(buf, sv.call.Fail(ctx, err))
		}
		werr := sv.out.Write(buf)
		if werr != nil {
			sv.call.Code = WriteFailed(werr)
			return
		}
		if err != nil {
			return
		}
	}
}

// recovered is the failure a panic was answered with, already logged.
type recovered struct{ f fault.Failure }

func (e recovered) Error() string          { return e.f.Message }
func (e recovered) Failure() fault.Failure { return e.f }
