package bedrock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/nirmata/llm-gateway/internal/bufpool"
)

// An event stream message (application/vnd.amazon.eventstream) is a prelude (total length,
// headers length, CRC32 of those 8 bytes), the headers, the payload, and a CRC32 of all
// that comes before it. readFrame decodes one as aws/protocol/eventstream's Decoder does,
// which FuzzReadFrame holds it to, but allocates nothing for the framing (the SDK decoder
// allocated about 35 objects per event) and keeps no buffer between frames.
const (
	preludeLen  = 12
	minFrameLen = preludeLen + 4 // no headers, no payload
	// growStep bounds how far a frame's buffer grows at a time, so a length in a prelude
	// alone cannot make the gateway allocate much more than was sent.
	growStep = 64 << 10
	// maxFrameLen is the largest frame the SDK's encoder writes (16 MiB of payload, 128 KiB
	// of headers): an upstream that sends more in one frame is broken, and is not buffered.
	maxFrameLen = minFrameLen + 128<<10 + 16<<20
)

var (
	errFrameChecksum = errors.New("event stream message checksum mismatch")
	errFrameLength   = errors.New("event stream message length invalid")
)

// frameHeaders are the headers the gateway reads; others are skipped. A repeated header
// counts as its last value, as with the SDK's Headers.Get.
type frameHeaders struct {
	messageType, eventType, exceptionType, errorCode, errorMessage string
}

// readFrame reads one message from r into the headers the gateway reads and the payload,
// which is valid until buf is given to putFrameBuf. buf holds the frame from the end of its
// prelude to its CRC: it is taken once a prelude has arrived and given back once the frame
// is decoded, so a stream waiting for Bedrock's next event holds none. It returns io.EOF if r ends before the
// message's first byte and io.ErrUnexpectedEOF if it ends within it.
func readFrame(r io.Reader, prelude *[preludeLen]byte, h *frameHeaders) (payload []byte, buf *[]byte, err error) {
	if _, err := io.ReadFull(r, prelude[:]); err != nil {
		return nil, nil, err
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	headersLen := binary.BigEndian.Uint32(prelude[4:8])
	if crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]) {
		return nil, nil, errFrameChecksum
	}
	if total < minFrameLen || total > maxFrameLen || headersLen > total-minFrameLen {
		// The SDK decoder reads on to the end of the body before it fails.
		return nil, nil, fmt.Errorf("%w: %d bytes, %d of headers", errFrameLength, total, headersLen)
	}
	buf = bufpool.Get()
	b, err := readN(r, (*buf)[:0], int(total)-preludeLen)
	*buf = b[:0]
	if err != nil {
		putFrameBuf(buf)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Update(crc32.ChecksumIEEE(prelude[:]), crc32.IEEETable, body) != sum {
		putFrameBuf(buf)
		return nil, nil, errFrameChecksum
	}
	*h = frameHeaders{}
	if err := h.parse(body[:headersLen]); err != nil {
		putFrameBuf(buf)
		return nil, nil, err
	}
	return body[headersLen:], buf, nil
}

// putFrameBuf gives a frame's buffer back.
func putFrameBuf(buf *[]byte) { bufpool.Put(buf, *buf) }

// readN reads n bytes into buf[:0], growing it growStep at a time (append's growth keeps
// that linear).
func readN(r io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), growStep))
		}
		m, err := io.ReadFull(r, buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// parse reads the headers section: name length (1 byte), name, value type (1 byte), value.
func (h *frameHeaders) parse(b []byte) error {
	for len(b) > 0 {
		n := int(b[0])
		if len(b) == 1 && n > 0 {
			return nil // the SDK decoder takes a name cut at its first byte for the end
		}
		if len(b) < 1+n+1 {
			return io.ErrUnexpectedEOF
		}
		name, typ := b[1:1+n], b[1+n]
		b = b[2+n:]
		size := 0
		switch typ {
		case 0, 1: // true, false
		case 2:
			size = 1
		case 3:
			size = 2
		case 4:
			size = 4
		case 5, 8: // int64, timestamp
			size = 8
		case 9: // uuid
			size = 16
		case 6, 7: // bytes, string: a 2-byte length first
			if len(b) < 2 {
				return io.ErrUnexpectedEOF
			}
			size = 2 + int(binary.BigEndian.Uint16(b))
		default:
			return fmt.Errorf("unable to decode header of unknown value type %d", typ)
		}
		if len(b) < size {
			return io.ErrUnexpectedEOF
		}
		value := b[:size]
		b = b[size:]
		var dst *string
		switch string(name) {
		case ":message-type":
			dst = &h.messageType
		case ":event-type":
			dst = &h.eventType
		case ":exception-type":
			dst = &h.exceptionType
		case ":error-code":
			dst = &h.errorCode
		case ":error-message":
			dst = &h.errorMessage
		default:
			continue
		}
		*dst = headerValue(typ, value)
	}
	return nil
}

// headerValue is a header's value as the SDK's Value.String gives it. Bedrock's headers
// are strings, and the common ones come without an allocation.
func headerValue(typ byte, v []byte) string {
	switch typ {
	case 7:
		s := v[2:]
		switch string(s) {
		case "event":
			return "event"
		case EventContentBlockDelta:
			return EventContentBlockDelta
		case EventContentBlockStart:
			return EventContentBlockStart
		case EventContentBlockStop:
			return EventContentBlockStop
		case EventMessageStart:
			return EventMessageStart
		case EventMessageStop:
			return EventMessageStop
		case EventMetadata:
			return EventMetadata
		}
		return string(s)
	case 0:
		return eventstream.BoolValue(true).String()
	case 1:
		return eventstream.BoolValue(false).String()
	case 2:
		return eventstream.Int8Value(int8(v[0])).String()
	case 3:
		return eventstream.Int16Value(int16(binary.BigEndian.Uint16(v))).String()
	case 4:
		return eventstream.Int32Value(int32(binary.BigEndian.Uint32(v))).String()
	case 5:
		return eventstream.Int64Value(int64(binary.BigEndian.Uint64(v))).String()
	case 6:
		return eventstream.BytesValue(v[2:]).String()
	case 8:
		ms := int64(binary.BigEndian.Uint64(v))
		return eventstream.TimestampValue(time.Unix(ms/1e3, ms%1e3*int64(time.Millisecond)).UTC()).String()
	default: // 9
		return eventstream.UUIDValue(v).String()
	}
}
