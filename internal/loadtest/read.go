package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
	// Malformed: an OpenAI answer or chunk that is not the shape OpenAI's API gives (not a
	// chat.completion or chat.completion.chunk object, no choice or finish reason, a tool
	// call without its name or with arguments that are not JSON, no usage).
	Malformed
	numKinds
)

var kindNames = [numKinds]string{"ok", "transport", "status", "stream_error", "truncated", "unexpected", "malformed"}

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

// openaiCompletion is what the OpenAI readers check of an answer: the members every
// chat.completion (unary) or chat.completion.chunk (stream) has. Others are not read.
type openaiCompletion struct {
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
	Error jsontext.Value `json:"error"`
}

// openai reads a unary chat completion whole and checks its shape: a chat.completion
// object with one assistant choice and its finish reason, tool calls with an id, type
// "function", a name and JSON arguments, and usage. A 200 whose body is an error object is
// a StreamError: the request failed, whatever the status said.
func (rd *reader) openai(body io.Reader, expect []byte) readResult {
	rd.body.Reset()
	if _, err := rd.body.ReadFrom(body); err != nil {
		return readResult{kind: Truncated}
	}
	var c openaiCompletion
	if err := json.Unmarshal(rd.body.Bytes(), &c); err != nil {
		return readResult{kind: Malformed}
	}
	if len(c.Error) > 0 && c.Error.Kind() != 'n' {
		return readResult{kind: StreamError}
	}
	if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Usage == nil || c.Usage.TotalTokens <= 0 {
		return readResult{kind: Malformed}
	}
	ch := &c.Choices[0]
	if ch.Message.Role != "assistant" || ch.FinishReason == nil || *ch.FinishReason == "" {
		return readResult{kind: Malformed}
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" || !jsontext.Value(tc.Function.Arguments).IsValid() {
			return readResult{kind: Malformed}
		}
	}
	if expect != nil && !bytes.Contains(rd.body.Bytes(), expect) {
		return readResult{kind: Unexpected}
	}
	return readResult{kind: OK}
}

// sse reads an OpenAI chat-completions stream: "data: {chunk}" events ending with
// "data: [DONE]". lines counts data lines (the [DONE] one included). Every event before
// [DONE] is decoded: an {"error":…} object is a stream error; anything but a
// chat.completion.chunk with a choices array is malformed. Complete means [DONE] came last,
// one chunk carried a finish reason, and, with needUsage, one carried usage; the finish
// reason rides on the last chunks, so expect may be in any of them.
func (rd *reader) sse(body io.Reader, expect []byte, needUsage bool, first func()) readResult {
	var res readResult
	var expected, finished, usage, failed, malformed bool
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
		if string(data) == "[DONE]" {
			return
		}
		expected = expected || expect == nil || bytes.Contains(data, expect)
		var c openaiCompletion
		if err := json.Unmarshal(data, &c); err != nil {
			malformed = true
			return
		}
		if len(c.Error) > 0 && c.Error.Kind() != 'n' {
			failed = true
			return
		}
		if c.Object != "chat.completion.chunk" || c.Choices == nil {
			malformed = true
		}
		for i := range c.Choices {
			if f := c.Choices[i].FinishReason; f != nil && *f != "" {
				finished = true
			}
		}
		usage = usage || c.Usage != nil && c.Usage.TotalTokens > 0
	})
	switch {
	case err != nil:
		res.kind = Truncated
	case failed:
		res.kind = StreamError
	case string(rd.last) != "[DONE]":
		res.kind = Truncated
	case malformed, !finished, needUsage && !usage:
		res.kind = Malformed
	case !expected:
		res.kind = Unexpected
	}
	return res
}

// anthropicSSE reads an Anthropic Messages stream: "event: <type>" and "data: {…}" pairs.
// lines counts data lines. Complete means the last event is message_stop; an error event
// is a stream error; expect is looked for in message_delta, which carries the stop reason.
func (rd *reader) anthropicSSE(body io.Reader, expect []byte, first func()) readResult {
	var res readResult
	var expected, failed bool
	rd.last = rd.last[:0]
	err := rd.eachLine(body, func(line []byte) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			return // the event: lines; each data's type names its event
		}
		data = bytes.TrimSpace(data)
		if res.lines == 0 && first != nil {
			first()
		}
		res.lines++
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(data, &ev) // a line that does not decode has no type
		rd.last = append(rd.last[:0], ev.Type...)
		switch ev.Type {
		case "error":
			failed = true
		case "message_delta":
			expected = expect == nil || bytes.Contains(data, expect)
		}
	})
	switch {
	case err != nil:
		res.kind = Truncated
	case failed:
		res.kind = StreamError
	case string(rd.last) != "message_stop":
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
