package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Kind classifies one request's outcome.
type Kind int

const (
	// OK is a complete answer.
	OK Kind = iota
	// Transport: no response at all (connection refused or reset, timeout before headers).
	Transport
	// Status: a response other than 200.
	Status
	// StreamError: the stream ended with an error line or an exception event.
	StreamError
	// Truncated: the body ended (or broke) before the answer was complete: no final done
	// line, no messageStop and metadata.
	Truncated
	// Unexpected: a complete answer without Scenario.Expect in it.
	Unexpected
	numKinds
)

var kindNames = [numKinds]string{"ok", "transport", "status", "stream_error", "truncated", "unexpected"}

func (k Kind) String() string { return kindNames[k] }

// reader reads answers to their end. It reuses its buffers from one answer to the next, so
// the load generator's own allocations stay small; it is not safe for concurrent use (one
// per worker).
type reader struct {
	br      *bufio.Reader
	line    []byte // the current line, assembled when longer than br's buffer
	last    []byte // the last complete line seen
	body    bytes.Buffer
	dec     *eventstream.Decoder
	payload []byte
}

func newReader() *reader {
	return &reader{br: bufio.NewReaderSize(nil, 16<<10), dec: eventstream.NewDecoder()}
}

// readResult is what one answer came to. lines counts JSONL lines, SSE data lines or
// event-stream frames.
// The stream readers call first once, when the first line or frame arrives (time to first
// line, open streams).
type readResult struct {
	kind  Kind
	lines int
}

// unary reads a whole body and looks for expect in it.
func (rd *reader) unary(body io.Reader, expect []byte) readResult {
	rd.body.Reset()
	if _, err := rd.body.ReadFrom(body); err != nil {
		return readResult{kind: Truncated}
	}
	if expect != nil && !bytes.Contains(rd.body.Bytes(), expect) {
		return readResult{kind: Unexpected}
	}
	return readResult{kind: OK}
}

// eachLine calls fn with every non-blank line of body, trimmed, however long, and returns
// the first read error other than io.EOF.
func (rd *reader) eachLine(body io.Reader, fn func(line []byte)) error {
	rd.br.Reset(body)
	for {
		chunk, err := rd.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			rd.line = append(rd.line, chunk...)
			continue
		}
		line := chunk
		if len(rd.line) > 0 {
			rd.line = append(rd.line, chunk...)
			line = rd.line
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			fn(line)
		}
		rd.line = rd.line[:0]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err // e.g. a chunked body cut before its terminating chunk
		}
	}
}

// jsonl reads a delta stream line by line. Only the last line decides the outcome: the
// contract puts nothing after a done or an error line, so a stream whose last line is
// neither was cut short.
func (rd *reader) jsonl(body io.Reader, expect []byte, first func()) readResult {
	var res readResult
	rd.last = rd.last[:0]
	err := rd.eachLine(body, func(line []byte) {
		if res.lines == 0 && first != nil {
			first()
		}
		res.lines++
		rd.last = append(rd.last[:0], line...)
	})
	if err != nil {
		res.kind = Truncated
		return res
	}
	var last struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(rd.last, &last) // a cut line does not decode: its type stays ""
	switch {
	case last.Type == "error":
		res.kind = StreamError
	case last.Type != "done":
		res.kind = Truncated
	case expect != nil && !bytes.Contains(rd.last, expect):
		res.kind = Unexpected
	}
	return res
}

// sse reads an OpenAI chat-completions stream: "data: {chunk}" events ending with
// "data: [DONE]". lines counts data lines (the [DONE] one included); the finish reason
// rides on the last chunk before [DONE], so expect may be in any of them. An event whose
// payload is an {"error":…} object is a stream error.
func (rd *reader) sse(body io.Reader, expect []byte, first func()) readResult {
	var res readResult
	var expected, failed bool
	rd.last = rd.last[:0]
	err := rd.eachLine(body, func(line []byte) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			return // comments, event:, id: and retry: lines
		}
		data = bytes.TrimSpace(data)
		if res.lines == 0 && first != nil {
			first()
		}
		res.lines++
		rd.last = append(rd.last[:0], data...)
		expected = expected || expect == nil || bytes.Contains(data, expect)
		failed = failed || bytes.HasPrefix(data, []byte(`{"error"`))
	})
	switch {
	case err != nil:
		res.kind = Truncated
	case failed:
		res.kind = StreamError
	case string(rd.last) != "[DONE]":
		res.kind = Truncated
	case !expected:
		res.kind = Unexpected
	}
	return res
}

// eventStream reads a Bedrock ConverseStream frame by frame, checking each frame's CRCs.
// Complete means messageStop arrived and metadata (Bedrock's last event) ended the stream.
func (rd *reader) eventStream(body io.Reader, expect []byte, first func()) readResult {
	rd.br.Reset(body)
	var res readResult
	var sawStop, expected bool
	lastType := ""
	for {
		msg, err := rd.dec.Decode(rd.br, rd.payload[:0])
		if err == io.EOF {
			break
		}
		if err != nil {
			res.kind = Truncated
			return res
		}
		rd.payload = msg.Payload // reuse the grown buffer for the next frame
		if res.lines == 0 && first != nil {
			first()
		}
		res.lines++
		if headerString(msg, ":message-type") != "event" {
			res.kind = StreamError // "exception" or "error"
			return res
		}
		lastType = headerString(msg, ":event-type")
		if lastType == "messageStop" {
			sawStop = true
			expected = expect == nil || bytes.Contains(msg.Payload, expect)
		}
	}
	switch {
	case !sawStop || lastType != "metadata":
		res.kind = Truncated
	case !expected:
		res.kind = Unexpected
	}
	return res
}

func headerString(msg eventstream.Message, name string) string {
	if v := msg.Headers.Get(name); v != nil {
		if s, ok := v.(eventstream.StringValue); ok {
			return string(s)
		}
	}
	return ""
}
