package bedrock

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodedFrame is what the gateway reads of a message.
type decodedFrame struct {
	Headers frameHeaders
	Payload string
}

// framesBySDK decodes data with aws/protocol/eventstream, the reference, and reports
// whether it ended cleanly between messages.
func framesBySDK(data []byte) (frames []decodedFrame, clean bool) {
	r := bytes.NewReader(data)
	dec := eventstream.NewDecoder()
	get := func(msg eventstream.Message, name string) string {
		if v := msg.Headers.Get(name); v != nil {
			return v.String()
		}
		return ""
	}
	for {
		before := r.Len()
		msg, err := dec.Decode(r, nil)
		if err != nil {
			return frames, err == io.EOF && r.Len() == before
		}
		frames = append(frames, decodedFrame{frameHeaders{
			messageType:   get(msg, ":message-type"),
			eventType:     get(msg, ":event-type"),
			exceptionType: get(msg, ":exception-type"),
			errorCode:     get(msg, ":error-code"),
			errorMessage:  get(msg, ":error-message"),
		}, string(msg.Payload)})
	}
}

func framesByReadFrame(data []byte) (frames []decodedFrame, clean bool) {
	r := bytes.NewReader(data)
	var prelude [preludeLen]byte
	var h frameHeaders
	for {
		payload, buf, err := readFrame(r, &prelude, &h)
		if err != nil {
			return frames, err == io.EOF
		}
		frames = append(frames, decodedFrame{h, string(payload)})
		putFrameBuf(buf)
	}
}

func checkFramesAgainstSDK(t *testing.T, data []byte) {
	t.Helper()
	want, wantClean := framesBySDK(data)
	got, gotClean := framesByReadFrame(data)
	require.Empty(t, cmp.Diff(want, got, cmp.AllowUnexported(frameHeaders{})), "frames of %x", data)
	require.Equal(t, wantClean, gotClean, "clean end of %x", data)
}

// message encodes one event stream message with the SDK's encoder.
func message(t testing.TB, payload string, headers ...eventstream.Header) []byte {
	var buf bytes.Buffer
	require.NoError(t, eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: headers, Payload: []byte(payload)}))
	return buf.Bytes()
}

func frameSeeds(t testing.TB) [][]byte {
	str := func(name, v string) eventstream.Header {
		return eventstream.Header{Name: name, Value: eventstream.StringValue(v)}
	}
	event := message(t, `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`,
		str(":message-type", "event"), str(":event-type", EventContentBlockDelta), str(":content-type", "application/json"))
	seeds := [][]byte{
		event,
		append(append([]byte{}, event...), event...),
		event[:len(event)-1],
		event[:5],
		message(t, `{"message":"slow down"}`, str(":message-type", "exception"), str(":exception-type", "throttlingException")),
		message(t, "", str(":message-type", "error"), str(":error-code", "InternalFailure"), str(":error-message", "boom")),
		message(t, "p", str(":event-type", "a"), str(":event-type", "b"), str(":message-type", "event")),
		message(t, "x",
			eventstream.Header{Name: ":message-type", Value: eventstream.BoolValue(true)},
			eventstream.Header{Name: ":event-type", Value: eventstream.Int8Value(-3)},
			eventstream.Header{Name: ":exception-type", Value: eventstream.Int16Value(300)},
			eventstream.Header{Name: ":error-code", Value: eventstream.Int32Value(-70000)},
			eventstream.Header{Name: ":error-message", Value: eventstream.Int64Value(1 << 40)},
			eventstream.Header{Name: "b", Value: eventstream.BytesValue("raw")},
			eventstream.Header{Name: ":error-message", Value: eventstream.TimestampValue(time.UnixMilli(1700000000123))},
			eventstream.Header{Name: ":event-type", Value: eventstream.UUIDValue{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
			eventstream.Header{Name: ":error-code", Value: eventstream.BoolValue(false)},
			eventstream.Header{Name: ":exception-type", Value: eventstream.BytesValue("raw")},
		),
		message(t, ""),
		{},
	}
	// A header section that ends in a name's length byte, which the SDK takes for the end;
	// and a corrupt checksum.
	cut := rawMessage([]byte{7, 'a'}, nil)
	bad := append([]byte{}, event...)
	bad[len(bad)-1] ^= 1
	return append(seeds, cut, rawMessage([]byte{0}, nil), bad)
}

// rawMessage frames headers bytes as given, with valid lengths and checksums.
func rawMessage(headers, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(minFrameLen+len(headers)+len(payload)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(headers)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	b = append(append(b, headers...), payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func TestReadFrameMatchesSDK(t *testing.T) {
	t.Parallel()
	for _, seed := range frameSeeds(t) {
		checkFramesAgainstSDK(t, seed)
	}
}

// FuzzReadFrame checks data as it is, and a message with valid lengths and checksums
// around headers and payload followed by data: random bytes rarely pass the checksums.
func FuzzReadFrame(f *testing.F) {
	for _, seed := range frameSeeds(f) {
		f.Add(seed, []byte(nil), []byte(nil))
	}
	f.Add([]byte(nil), []byte("\x0d:message-type\x07\x00\x05event\x0b:event-type\x07\x00\x01x"), []byte("{}"))
	f.Add([]byte(nil), []byte("\x01a\x09abcdefghijklmnop\x01b\x08\x00\x00\x00\x00\x00\x00\x00\x01\x01c\x06\x00\x01z"), []byte(nil))
	f.Fuzz(func(t *testing.T, data, headers, payload []byte) {
		checkFramesAgainstSDK(t, data)
		checkFramesAgainstSDK(t, append(rawMessage(headers, payload), data...))
	})
}

// A frame allocates nothing but what the event decodes to, and a stream waiting for its
// next frame holds no buffer.
func TestReadFrameAllocations(t *testing.T) {
	event := message(t, `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`,
		eventstream.Header{Name: ":message-type", Value: eventstream.StringValue("event")},
		eventstream.Header{Name: ":event-type", Value: eventstream.StringValue(EventContentBlockDelta)},
		eventstream.Header{Name: ":content-type", Value: eventstream.StringValue("application/json")})
	r := bytes.NewReader(nil)
	var prelude [preludeLen]byte
	var h frameHeaders
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(event)
		_, buf, err := readFrame(r, &prelude, &h)
		if err != nil {
			t.Fatal(err)
		}
		putFrameBuf(buf)
	})
	require.Zero(t, allocs)
	require.Equal(t, EventContentBlockDelta, h.eventType)
}

// BenchmarkEventStream reads a stream of 30 events from memory: framing and event decoding,
// without the network.
func BenchmarkEventStream(b *testing.B) {
	var raw []byte
	add := func(typ, payload string) {
		raw = append(raw, message(b, payload,
			eventstream.Header{Name: ":event-type", Value: eventstream.StringValue(typ)},
			eventstream.Header{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			eventstream.Header{Name: ":message-type", Value: eventstream.StringValue("event")})...)
	}
	add(EventMessageStart, `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN","role":"assistant"}`)
	for range 12 {
		add(EventContentBlockDelta, `{"contentBlockIndex":0,"delta":{"text":"Hello there, "},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`)
	}
	add(EventContentBlockStart, `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ","start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_abc"}}}`)
	for range 12 {
		add(EventContentBlockDelta, `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}},"p":"abcdefghijklmnopqrstuvwxyzABCDEF"}`)
	}
	add(EventContentBlockStop, `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`)
	add(EventMessageStop, `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ","stopReason":"tool_use"}`)
	add(EventMetadata, `{"metrics":{"latencyMs":1234},"p":"abcdefghijklmnop","usage":{"inputTokens":262,"outputTokens":41,"totalTokens":303}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	r := bytes.NewReader(nil)
	for b.Loop() {
		r.Reset(raw)
		s := NewEventStream(io.NopCloser(r))
		for {
			if _, err := s.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// A frame past the largest the SDK writes is refused at its prelude, before any byte of it
// is buffered, however much the upstream goes on to send.
func TestReadFrameRefusesOversizedFrames(t *testing.T) {
	prelude := binary.BigEndian.AppendUint32(nil, maxFrameLen+1)
	prelude = binary.BigEndian.AppendUint32(prelude, 0)
	prelude = binary.BigEndian.AppendUint32(prelude, crc32.ChecksumIEEE(prelude))
	var p [preludeLen]byte
	var h frameHeaders
	_, _, err := readFrame(io.MultiReader(bytes.NewReader(prelude), neverEnding{}), &p, &h)
	require.ErrorIs(t, err, errFrameLength)
}

// neverEnding is an upstream that sends zeros for ever.
type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A prelude that claims almost the largest frame, followed by a few bytes, costs a few bytes.
func TestReadFrameGrowsWithWhatArrives(t *testing.T) {
	prelude := binary.BigEndian.AppendUint32(nil, maxFrameLen)
	prelude = binary.BigEndian.AppendUint32(prelude, 0)
	prelude = binary.BigEndian.AppendUint32(prelude, crc32.ChecksumIEEE(prelude))
	var p [preludeLen]byte
	var h frameHeaders
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := readFrame(bytes.NewReader(append(prelude, make([]byte, 100<<10)...)), &p, &h)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))
}

// TestReadyTellsWhatHasArrived: Ready is true exactly when the next event is already in
// hand, so a surface can write a burst at once and never waits for an event to pass one on.
func TestReadyTellsWhatHasArrived(t *testing.T) {
	t.Parallel()
	event := func(typ, payload string) []byte {
		return message(t, payload,
			eventstream.Header{Name: ":message-type", Value: eventstream.StringValue("event")},
			eventstream.Header{Name: ":event-type", Value: eventstream.StringValue(typ)})
	}
	delta := event(EventContentBlockDelta, `{"contentBlockIndex":0,"delta":{"text":"a"}}`)
	pr, pw := io.Pipe()
	s := NewEventStream(pr)
	defer s.Close()
	go func() {
		_, _ = pw.Write(append(append(event(EventMessageStart, `{"role":"assistant"}`), delta...), delta[:5]...)) // a burst, and a part of the next
		_, _ = pw.Write(delta[5:])
		_ = pw.Close()
	}()
	assert.False(t, s.Ready(), "nothing read yet")
	ev, err := s.Next()
	require.NoError(t, err)
	assert.Equal(t, EventMessageStart, ev.Type)
	assert.True(t, s.Ready(), "the second event came in the same write")
	_, err = s.Next()
	require.NoError(t, err)
	assert.False(t, s.Ready(), "only 5 bytes of the third have arrived")
	ev, err = s.Next()
	require.NoError(t, err)
	assert.Equal(t, EventContentBlockDelta, ev.Type)
	_, err = s.Next()
	assert.ErrorIs(t, err, io.EOF)
	assert.False(t, s.Ready())
}
