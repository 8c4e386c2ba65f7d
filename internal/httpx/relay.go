package httpx

import (
	"io"
	"net/http"
	"time"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// Frames is how a REST surface writes a stream: its content type and its frames. It is all
// of a stream a surface declares; Relay does the rest.
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

// Relay answers with st, the core's stream of call, in f's frames: the status and headers
// of what the core did, then each upstream event's frames written and flushed as they
// come, each write bounded by writeTimeout (a client that stops reading is cut, which ends
// the upstream call). A failure after the first byte is the stream's last frame; a bug
// after it still ends the stream the way the contract says. Once the stream is over, the
// call has its Result and the headers declared as trailers are set. It returns an error
// only with WaitFirst, for a failure before the first event.
func Relay(w http.ResponseWriter, r *http.Request, st *core.Stream, f Frames, writeTimeout time.Duration, call *observe.Call) error {
	defer func() {
		call.Result = st.Result()
		SetStreamTrailers(w.Header(), call.Result)
	}()
	var (
		events []chat.Event
		err    error
	)
	for f.WaitFirst && len(events) == 0 && err == nil {
		events, err = st.Next(events[:0])
	}
	if f.WaitFirst && len(events) == 0 && err != io.EOF {
		return err
	}
	SetStreamHeaders(w.Header(), st.Result())
	out := StartStream(w, f.ContentType, writeTimeout)
	defer out.End()
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			_ = out.Write(f.Error(nil, call.Recovered("stream", p)))
		}
	}()
	var buf []byte
	for started := f.WaitFirst; ; started = false {
		if !started {
			events, err = st.Next(events[:0])
		}
		buf = buf[:0]
		for i := range events {
			buf = f.Event(buf, &events[i])
		}
		if err != nil && err != io.EOF {
			buf = f.Error(buf, call.Fail(r.Context(), err))
		}
		if werr := out.Write(buf); werr != nil {
			call.Answered(writeFailed(werr))
			return nil
		}
		if err != nil {
			return nil
		}
	}
}
