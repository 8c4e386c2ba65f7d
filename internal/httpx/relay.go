package httpx

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/nirmata/llm-gateway/internal/apart"
	"github.com/nirmata/llm-gateway/internal/bufpool"
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
	// Ping appends a keep-alive frame, written whenever nothing was written for PingEvery
	// while the stream is open (a long silence upstream, such as a model thinking, is not
	// mistaken for a dead connection by the client or a proxy's idle timeout). Both or
	// neither are set; without them a stream costs nothing more.
	Ping      func(dst []byte) []byte
	PingEvery time.Duration
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
// headers), run on a goroutine of their own (apart.Run), which Serve waits for; the
// connection's goroutine relays the stream for as long as it lasts. A goroutine's stack
// keeps the size its deepest call once needed for as long as the goroutine is that busy,
// and decoding and translating a request take 16 KiB of stack (the JSON decoder's
// recursion alone some 9 KiB), net/http's first write of an answer 4 KiB more than the
// writes after it, the relay itself under 8 KiB: so each open stream holds an 8 KiB
// stack, not 16 (docs/PERFORMANCE.md, memory per open stream). A panic in prepare is
// logged with its stack there and answered as the route answers any failure.
func Serve(w http.ResponseWriter, r *http.Request, call *observe.Call, writeTimeout time.Duration, prepare Prepare) error {
	sv := serving{w: w, call: call, prepare: prepare, timeout: writeTimeout}
	apart.Run(sv.begin)
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
	// abort: begin panicked with http.ErrAbortHandler, which Serve panics with again.
	abort bool

	st     *core.Stream
	frames Frames
	// out writes the stream once it started; events and err are what the wait for the
	// first event got, when it was waited for.
	out    *StreamWriter
	events []chat.Event
	err    error
	// ping, with Frames.Ping, writes the stream's frames and its pings in turn.
	ping *pinger
}

// begin prepares the call and starts its stream, if any, on its own goroutine (Serve).
func (sv *serving) begin() {
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
	if sv.frames.Ping != nil && sv.frames.PingEvery > 0 {
		sv.ping = startPinger(sv.out, sv.frames.Ping, sv.frames.PingEvery)
	}
}

// relay writes the stream's events as they come, until it ends or the client is gone.
func (sv *serving) relay(ctx context.Context) {
	if sv.ping != nil {
		defer sv.ping.stop()
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			_ = sv.write(sv.frames.Error(nil, sv.call.Recovered("stream", p)))
		}
	}()
	events, err := sv.events, sv.err
	for started := sv.frames.WaitFirst; ; started = false {
		if !started {
			events, err = sv.st.Next(events[:0])
		}
		// The frames are encoded in a buffer of the pool, given back once written: a stream
		// waiting for its next event holds none (one of its own would stay as large as the
		// largest burst's frames).
		bp := bufpool.Get()
		buf := *bp
		for i := range events {
			buf = sv.frames.Event(buf, &events[i])
		}
		if err != nil && err != io.EOF {
			buf = sv.frames.Error(buf, sv.call.Fail(ctx, err))
		}
		werr := sv.write(buf)
		bufpool.Put(bp, buf)
		if werr != nil {
			sv.call.Answered(writeFailed(werr))
			return
		}
		if err != nil {
			return
		}
	}
}

// write writes b to the stream, in turn with its pings if it has them.
func (sv *serving) write(b []byte) error {
	if sv.ping != nil {
		return sv.ping.write(b)
	}
	return sv.out.Write(b)
}

// pinger writes a stream's frames and, whenever nothing was written for every, a ping:
// one timer per stream, which each firing re-arms for what is left of the interval since
// the last write, so a write costs a clock read and no timer reset.
type pinger struct {
	mu    sync.Mutex
	out   *StreamWriter
	frame func(dst []byte) []byte
	every time.Duration
	timer *time.Timer
	buf   []byte
	last  time.Time
	// done: the stream is over, or a write failed (the client is gone or stopped
	// reading, which the relay's next write finds too); no more pings.
	done bool
}

func startPinger(out *StreamWriter, frame func([]byte) []byte, every time.Duration) *pinger {
	p := &pinger{out: out, frame: frame, every: every, last: time.Now()}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = time.AfterFunc(every, p.ping)
	return p
}

// write writes b, never during a ping.
func (p *pinger) write(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.out.Write(b)
	p.last = time.Now()
	if err != nil {
		p.done = true
	}
	return err
}

// ping runs on the timer's goroutine: it writes a ping if nothing was written for every,
// and re-arms the timer.
func (p *pinger) ping() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	if wait := p.every - time.Since(p.last); wait > 0 {
		p.timer.Reset(wait)
		return
	}
	p.buf = p.frame(p.buf[:0])
	if p.out.Write(p.buf) != nil {
		p.done = true
		return
	}
	p.last = time.Now()
	p.timer.Reset(p.every)
}

// stop ends the pings before the stream's writer is ended: no ping is written after it
// returns.
func (p *pinger) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	p.timer.Stop()
}

// recovered is the failure a panic was answered with, already logged.
type recovered struct{ f fault.Failure }

func (e recovered) Error() string          { return e.f.Message }
func (e recovered) Failure() fault.Failure { return e.f }
