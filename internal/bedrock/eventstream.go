package bedrock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
)

// EventStream reads ConverseStream events from an application/vnd.amazon.eventstream
// body. It is not safe for concurrent use. Close it on every path, or the connection leaks.
//
// It reads the body through a buffer of its own (bodyReader), so it can tell whether the
// next event has already arrived (Ready): a surface then writes the events of one burst to
// its client in one write, where a write and a flush per event cost a quarter of a
// stream's CPU.
type EventStream struct {
	body     io.ReadCloser
	r        *bodyReader // nil once closed
	prelude  [preludeLen]byte
	headers  frameHeaders
	complete bool // metadata, Bedrock's last event, was read
	// ahead holds the events Start read, which Next returns first, then aheadErr, the
	// error Start met, if any.
	ahead    []StreamEvent
	aheadErr error
}

// After the last event, Close reads at most drainLimit bytes, for at most drainWait: the
// chunked terminator, which Bedrock sends right after metadata.
const (
	drainLimit = 4 << 10
	drainWait  = time.Second
)

// NewEventStream reads events from body and owns it: closing it ends the call that body
// belongs to.
func NewEventStream(body io.ReadCloser) *EventStream {
	return &EventStream{body: body, r: &bodyReader{body: body}}
}

// bodyReader reads a stream's body through a buffer (4 KiB, pooled) that it holds only
// while it has bytes in it: a stream that waits for Bedrock's next event, as most open
// streams do most of the time, holds none. It waits with a few bytes of its own (wait),
// then takes the buffer and reads what else has arrived, as bufio.Reader's one read per
// fill would.
type bodyReader struct {
	body io.Reader
	buf  *[]byte // nil when empty
	r, w int     // buf[r:w] is unread
	wait [16]byte
}

// readBufSize is the size of a bodyReader's buffer.
const readBufSize = 4 << 10

// readBufs holds the buffers of bodyReaders.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// Read reads what is buffered, or else waits for the body.
func (b *bodyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.buf == nil {
		if err := b.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*b.buf)[b.r:b.w])
	b.r += n
	if b.r == b.w {
		b.release()
	}
	return n, nil
}

// fill waits for the body's next bytes into wait, then takes a buffer and reads into it
// what else came, once.
func (b *bodyReader) fill() error {
	n, err := b.body.Read(b.wait[:])
	if n == 0 {
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	b.buf = readBufs.Get().(*[]byte)
	b.r, b.w = 0, copy(*b.buf, b.wait[:n])
	if err == nil {
		m, _ := b.body.Read((*b.buf)[b.w:]) // an error comes again at the next fill
		b.w += m
	}
	return nil
}

func (b *bodyReader) release() {
	if b.buf != nil {
		readBufs.Put(b.buf)
		b.buf, b.r, b.w = nil, 0, 0
	}
}

// buffered is what Read returns without waiting.
func (b *bodyReader) buffered() []byte {
	if b.buf == nil {
		return nil
	}
	return (*b.buf)[b.r:b.w]
}

// Ready reports whether the next event has arrived whole, so Next will not wait for it.
func (s *EventStream) Ready() bool {
	if len(s.ahead) > 0 || s.aheadErr != nil {
		return true
	}
	if s.r == nil {
		return false
	}
	buffered := s.r.buffered()
	return len(buffered) >= preludeLen && int(binary.BigEndian.Uint32(buffered)) <= len(buffered)
}

// Next returns the next event. It returns io.EOF when the body ends cleanly between frames
// (whether or not messageStop came: that is the caller's check), an *APIError for an
// in-stream exception, and another error for a cut or malformed frame.
func (s *EventStream) Next() (StreamEvent, error) {
	if len(s.ahead) > 0 {
		ev := s.ahead[0]
		s.ahead = s.ahead[1:]
		return ev, nil
	}
	if s.aheadErr != nil {
		return StreamEvent{}, s.aheadErr
	}
	return s.next()
}

// Start reads the stream up to its first event after messageStart, the first that can
// carry part of the answer, and keeps what it read for Next. It returns the error that
// came first instead, if one did (an exception Bedrock sent before any content, a body cut
// short), which Next returns as well once the kept events are read. So a caller that has
// passed nothing of the stream on yet can tell a failure it may still take elsewhere
// (docs/PROTOCOL.md 14.4).
func (s *EventStream) Start() error {
	for range 2 { // messageStart comes once, first
		ev, err := s.next()
		if err != nil {
			s.aheadErr = err
			return err
		}
		s.ahead = append(s.ahead, ev)
		if ev.Type != EventMessageStart {
			break
		}
	}
	return nil
}

func (s *EventStream) next() (StreamEvent, error) {
	if s.r == nil {
		return StreamEvent{}, fmt.Errorf("%w: the stream is closed", ErrTransport)
	}
	payload, buf, err := readFrame(s.r, &s.prelude, &s.headers)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return StreamEvent{}, err // the call was ended on purpose, not by Bedrock
		}
		if err == io.EOF {
			return StreamEvent{}, io.EOF // between frames
		}
		return StreamEvent{}, fmt.Errorf("%w: decode event: %w", ErrTransport, err)
	}
	defer putFrameBuf(buf) // what is decoded from the payload does not point into it
	h := &s.headers
	switch h.messageType {
	case "event":
		s.complete = h.eventType == EventMetadata
		return decodeEvent(h.eventType, payload)
	case "exception":
		var body ErrorBody
		_ = json.Unmarshal(payload, &body)
		code := NormalizeCode(h.exceptionType)
		return StreamEvent{}, &APIError{Code: code, Message: body.Message, StatusCode: StatusCode(code)}
	case "error":
		code := NormalizeCode(h.errorCode)
		return StreamEvent{}, &APIError{Code: code, Message: h.errorMessage, StatusCode: StatusCode(code)}
	default:
		return StreamEvent{}, fmt.Errorf("%w: unknown event stream message type %q", ErrTransport, h.messageType)
	}
}

// Close releases the connection and ends the call. After the last event it first reads
// the body's end, so the HTTP client can reuse the connection instead of dialling a new one
// for the next stream; an upstream that does not end its body promptly is cut off: the
// body is closed under the read that waits for it (the HTTP transport then closes the
// connection, which ends the read).
func (s *EventStream) Close() error {
	if s.r == nil {
		return nil
	}
	if s.complete {
		t := time.AfterFunc(drainWait, func() { _ = s.body.Close() })
		_, _ = io.CopyN(io.Discard, s.r, drainLimit)
		t.Stop()
	}
	err := s.body.Close()
	s.r.release()
	s.r = nil
	return err
}
