package bedrock

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// EventStream reads ConverseStream events from an application/vnd.amazon.eventstream
// body. It is not safe for concurrent use. Close it on every path, or the connection leaks.
type EventStream struct {
	body    io.ReadCloser
	r       *bufio.Reader
	dec     *eventstream.Decoder
	payload []byte // reused between frames
}

func newEventStream(body io.ReadCloser) *EventStream {
	return &EventStream{body: body, r: bufio.NewReaderSize(body, 4<<10), dec: eventstream.NewDecoder()}
}

// NewEventStream reads events from r; the stream owns r and closes it.
func NewEventStream(r io.ReadCloser) *EventStream { return newEventStream(r) }

// Next returns the next event. It returns io.EOF when the body ends cleanly between frames
// (whether or not messageStop came: that is the caller's check), an *APIError for an
// in-stream exception, and another error for a cut or malformed frame.
func (s *EventStream) Next() (StreamEvent, error) {
	if _, err := s.r.Peek(1); err != nil {
		if errors.Is(err, io.EOF) {
			return StreamEvent{}, io.EOF
		}
		return StreamEvent{}, fmt.Errorf("%w: read event stream: %w", ErrTransport, err)
	}
	msg, err := s.dec.Decode(s.r, s.payload[:0])
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the frame was cut after its first byte
		}
		return StreamEvent{}, fmt.Errorf("%w: decode event: %w", ErrTransport, err)
	}
	s.payload = msg.Payload
	switch headerString(msg, ":message-type") {
	case "event":
		return decodeEvent(headerString(msg, ":event-type"), msg.Payload)
	case "exception":
		var body ErrorBody
		_ = json.Unmarshal(msg.Payload, &body)
		code := NormalizeCode(headerString(msg, ":exception-type"))
		return StreamEvent{}, &APIError{Code: code, Message: body.Message, StatusCode: StatusCode(code)}
	case "error":
		code := NormalizeCode(headerString(msg, ":error-code"))
		return StreamEvent{}, &APIError{Code: code, Message: headerString(msg, ":error-message"), StatusCode: StatusCode(code)}
	default:
		return StreamEvent{}, fmt.Errorf("%w: unknown event stream message type %q", ErrTransport, headerString(msg, ":message-type"))
	}
}

// Close releases the connection.
func (s *EventStream) Close() error { return s.body.Close() }

func headerString(msg eventstream.Message, name string) string {
	v := msg.Headers.Get(name)
	if v == nil {
		return ""
	}
	return v.String()
}

// decodeEvent decodes one event payload by its :event-type. Unknown event types are
// returned with only Type set, so newer Bedrock events pass by without failing a stream.
func decodeEvent(typ string, payload []byte) (StreamEvent, error) {
	ev := StreamEvent{Type: typ}
	var dst any
	switch typ {
	case EventMessageStart:
		ev.MessageStart = new(MessageStartEvent)
		dst = ev.MessageStart
	case EventContentBlockStart:
		ev.ContentBlockStart = new(ContentBlockStartEvent)
		dst = ev.ContentBlockStart
	case EventContentBlockDelta:
		ev.ContentBlockDelta = new(ContentBlockDeltaEvent)
		dst = ev.ContentBlockDelta
	case EventContentBlockStop:
		ev.ContentBlockStop = new(ContentBlockStopEvent)
		dst = ev.ContentBlockStop
	case EventMessageStop:
		ev.MessageStop = new(MessageStopEvent)
		dst = ev.MessageStop
	case EventMetadata:
		ev.Metadata = new(MetadataEvent)
		dst = ev.Metadata
	default:
		return ev, nil
	}
	if err := json.Unmarshal(payload, dst); err != nil {
		return StreamEvent{}, fmt.Errorf("%w: decode %s event: %w", ErrTransport, typ, err)
	}
	return ev, nil
}
