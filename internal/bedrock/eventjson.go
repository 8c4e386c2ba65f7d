package bedrock

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// eventDecoder decodes the JSON payload of a ConverseStream event into the structs of
// wire.go by hand: one function per object, reading its members in one loop from a
// jsontext.Decoder, no reflection, no closures; the first error stops every loop, as
// bufio.Scanner's does. json.Unmarshal's reflection took up to ~4.5 KiB of stack for a
// nested event, on a relay goroutine whose stack must stay at 8 KiB (internal/httpx/relay.go).
//
// It decodes exactly as json.Unmarshal with Lenient does (eventjson_test.go holds the two
// to the same results): names match exactly, unknown members are skipped, a repeated member
// is decoded again into what the first one set (objects merge, other values are
// replaced), null zeroes a value (a pointer becomes nil, a jsontext.Value holds null),
// invalid UTF-8 in strings becomes U+FFFD, and an integer with a fraction or exponent or
// out of its type's range is an error.
type eventDecoder struct {
	in  bytes.Buffer // the payload, which dec reads in place
	dec *jsontext.Decoder
	// name is the name of the member being read, unquoted: in the payload, or in escaped
	// when it has escapes.
	name, escaped []byte
	text          []byte // the string being read, unquoted
	err           error  // the first error, after which nothing more is read
}

// eventDecoders holds decoders between events, so an event allocates only what it decodes
// to.
var eventDecoders = sync.Pool{New: func() any {
	d := &eventDecoder{}
	d.dec = jsontext.NewDecoder(&d.in, Lenient)
	return d
}}

// maxPooledText bounds the buffers a pooled decoder keeps.
const maxPooledText = 64 << 10

// decodeEvent decodes one event payload by its :event-type. Unknown event types are
// returned with only Type set, so newer Bedrock events pass by without failing a stream.
func decodeEvent(typ string, payload []byte) (StreamEvent, error) {
	ev := StreamEvent{Type: typ}
	d := eventDecoders.Get().(*eventDecoder)
	d.reset(payload)
	switch typ {
	case EventMessageStart:
		ev.MessageStart = new(MessageStartEvent)
		d.messageStart(ev.MessageStart)
	case EventContentBlockStart:
		ev.ContentBlockStart = new(ContentBlockStartEvent)
		d.contentBlockStart(ev.ContentBlockStart)
	case EventContentBlockDelta:
		ev.ContentBlockDelta = new(ContentBlockDeltaEvent)
		d.contentBlockDelta(ev.ContentBlockDelta)
	case EventContentBlockStop:
		ev.ContentBlockStop = new(ContentBlockStopEvent)
		d.contentBlockStop(ev.ContentBlockStop)
	case EventMessageStop:
		ev.MessageStop = new(MessageStopEvent)
		d.messageStop(ev.MessageStop)
	case EventMetadata:
		ev.Metadata = new(MetadataEvent)
		d.metadata(ev.Metadata)
	default:
		d.release()
		return ev, nil
	}
	d.end()
	err := d.err
	d.release()
	if err != nil {
		return StreamEvent{}, eventError(typ, err)
	}
	return ev, nil
}

// reset readies d to read payload, which its decoder reads in place.
func (d *eventDecoder) reset(payload []byte) {
	d.in = *bytes.NewBuffer(payload)
	d.dec.Reset(&d.in, Lenient)
	d.err = nil
}

// release returns d to the pool. Its decoder keeps the payload it read, a frame buffer
// (pooled as well), until the next reset.
func (d *eventDecoder) release() {
	if cap(d.text) > maxPooledText {
		d.text = nil
	}
	if cap(d.escaped) > maxPooledText {
		d.escaped = nil
	}
	eventDecoders.Put(d)
}

// eventError is the error of an event that does not decode.
func eventError(typ string, err error) error {
	if err == io.EOF { // an empty payload
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: decode %s event: %w", ErrTransport, typ, err)
}

// end checks that nothing but white space follows the event's value.
func (d *eventDecoder) end() {
	if d.err != nil {
		return
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		d.err = cmp.Or(err, errors.New("another value after the event's"))
	}
}

func (d *eventDecoder) messageStart(m *MessageStartEvent) {
	if !object(d, m) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "role":
			d.string(&m.Role)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) contentBlockStart(e *ContentBlockStartEvent) {
	if !object(d, e) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "contentBlockIndex":
			integer(d, &e.ContentBlockIndex)
		case "start":
			d.start(&e.Start)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) start(s *ContentBlockStart) {
	if !object(d, s) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "toolUse":
			optional(d, &s.ToolUse, (*eventDecoder).toolUseStart)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) toolUseStart(t *ToolUseBlockStart) {
	if !object(d, t) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "toolUseId":
			d.string(&t.ToolUseID)
		case "name":
			d.string(&t.Name)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) contentBlockDelta(e *ContentBlockDeltaEvent) {
	if !object(d, e) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "contentBlockIndex":
			integer(d, &e.ContentBlockIndex)
		case "delta":
			d.delta(&e.Delta)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) delta(c *ContentBlockDelta) {
	if !object(d, c) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "text":
			optional(d, &c.Text, (*eventDecoder).string)
		case "toolUse":
			optional(d, &c.ToolUse, (*eventDecoder).toolUseDelta)
		case "reasoningContent":
			optional(d, &c.ReasoningContent, (*eventDecoder).reasoningDelta)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) toolUseDelta(t *ToolUseDelta) {
	if !object(d, t) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "input":
			d.string(&t.Input)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) reasoningDelta(r *ReasoningDelta) {
	if !object(d, r) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "text":
			optional(d, &r.Text, (*eventDecoder).string)
		case "signature":
			optional(d, &r.Signature, (*eventDecoder).string)
		case "redactedContent":
			optional(d, &r.RedactedContent, (*eventDecoder).string)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) contentBlockStop(e *ContentBlockStopEvent) {
	if !object(d, e) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "contentBlockIndex":
			integer(d, &e.ContentBlockIndex)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) messageStop(m *MessageStopEvent) {
	if !object(d, m) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "stopReason":
			d.string(&m.StopReason)
		case "additionalModelResponseFields":
			d.raw(&m.AdditionalModelResponseFields)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) metadata(m *MetadataEvent) {
	if !object(d, m) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "usage":
			optional(d, &m.Usage, (*eventDecoder).usage)
		case "metrics":
			optional(d, &m.Metrics, (*eventDecoder).metrics)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) usage(u *TokenUsage) {
	if !object(d, u) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "inputTokens":
			integer(d, &u.InputTokens)
		case "outputTokens":
			integer(d, &u.OutputTokens)
		case "totalTokens":
			integer(d, &u.TotalTokens)
		case "cacheReadInputTokens":
			integer(d, &u.CacheReadInputTokens)
		case "cacheWriteInputTokens":
			integer(d, &u.CacheWriteInputTokens)
		default:
			d.skip()
		}
	}
}

func (d *eventDecoder) metrics(m *Metrics) {
	if !object(d, m) {
		return
	}
	for d.next() {
		switch string(d.name) {
		case "latencyMs":
			integer(d, &m.LatencyMs)
		default:
			d.skip()
		}
	}
}

// object reads the start of an object to decode into *v, and reports whether its members
// follow; null zeroes *v.
func object[T any](d *eventDecoder, v *T) bool {
	if d.err != nil {
		return false
	}
	tok, err := d.dec.ReadToken()
	switch {
	case err != nil:
		d.err = err
	case tok.Kind() == '{':
		return true
	case tok.Kind() == 'n':
		*v = *new(T)
	default:
		d.want("an object", tok.Kind())
	}
	return false
}

// next reads the name of the object's next member into d.name, and reports whether there
// is one; at the object's end it reads the '}'.
func (d *eventDecoder) next() bool {
	if d.err != nil {
		return false
	}
	if d.dec.PeekKind() != '"' {
		_, d.err = d.dec.ReadToken() // '}', or the syntax error where a name should be
		return false
	}
	raw, err := d.dec.ReadValue()
	if err != nil {
		d.err = err
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		// As written: invalid UTF-8, which unquoting would replace, matches no name either way.
		d.name = raw[1 : len(raw)-1]
	} else {
		d.escaped, _ = jsontext.AppendUnquote(d.escaped[:0], raw)
		d.name = d.escaped
	}
	return true
}

// skip reads past a member the gateway does not use.
func (d *eventDecoder) skip() {
	d.err = d.dec.SkipValue()
}

// optional decodes a member held by pointer: null sets *p to nil, another value is decoded
// by decode into *p, which is allocated when nil.
func optional[T any](d *eventDecoder, p **T, decode func(*eventDecoder, *T)) {
	if d.dec.PeekKind() == 'n' {
		*p = nil
		_, d.err = d.dec.ReadToken()
		return
	}
	if *p == nil {
		*p = new(T)
	}
	decode(d, *p)
}

// string decodes a string into *p; null is "".
func (d *eventDecoder) string(p *string) {
	raw, err := d.dec.ReadValue()
	switch {
	case err != nil:
		d.err = err
	case raw.Kind() == 'n':
		*p = ""
	case raw.Kind() == '"':
		d.text, _ = jsontext.AppendUnquote(d.text[:0], raw) // invalid UTF-8 becomes U+FFFD
		*p = string(d.text)
	default:
		d.want("a string", raw.Kind())
	}
}

// integer decodes an integer into *p; null is 0.
func integer[T int | int32 | int64](d *eventDecoder, p *T) {
	raw, err := d.dec.ReadValue()
	switch {
	case err != nil:
		d.err = err
	case raw.Kind() == 'n':
		*p = 0
	case raw.Kind() == '0':
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || int64(T(n)) != n {
			d.outOfRange(raw)
			return
		}
		*p = T(n)
	default:
		d.want("an integer", raw.Kind())
	}
}

// raw decodes any value into *p as it is written; null is the text null.
func (d *eventDecoder) raw(p *jsontext.Value) {
	raw, err := d.dec.ReadValue()
	if err != nil {
		d.err = err
		return
	}
	*p = append((*p)[:0], raw...)
}

// want fails the decoding at a value of kind k where what was expected.
func (d *eventDecoder) want(what string, k jsontext.Kind) {
	d.err = fmt.Errorf("want %s at %q, got %s", what, d.dec.StackPointer(), kindName(k))
}

// outOfRange fails the decoding at a number that is not an integer of the member's type.
func (d *eventDecoder) outOfRange(number jsontext.Value) {
	got := string(number)
	if len(got) > 24 {
		got = fmt.Sprintf("a number of %d characters", len(got))
	}
	d.err = fmt.Errorf("want an integer in range at %q, got %s", d.dec.StackPointer(), got)
}

// kindName names a JSON kind in errors.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "nothing"
}
