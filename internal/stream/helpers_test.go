package stream_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/stream"
)

// These tests are in package stream_test so that they can write what a client reads with
// the REST surface's own encoders (nirmata.AppendLine for JSONL, nirmata.Chunker for
// chunked) and decode a case's request with nirmata.DecodeRequest: internal/nirmata
// depends on stream through the core.

// A fixture (testdata/<case>.bedrock.jsonl) holds one upstream frame a line:
//
//	{"<eventType>":{…payload…}}                    an event frame, payload as written
//	{"exception":{"type":"…","message":"…"}}       an in-stream exception frame
//	{"cut":true}                                   half a frame, then the body ends
//	{"eof":true}                                   the body ends cleanly here
//
// exception, cut and eof end the fixture. fixtureBody encodes it as the
// application/vnd.amazon.eventstream body Bedrock would send, so tests read it through
// the real bedrock.EventStream.
func fixtureBody(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var body bytes.Buffer
	enc := eventstream.NewEncoder()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	ended := false
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		require.False(t, ended, "%s:%d: line after the end of the stream", path, line)
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(text), &obj), "%s:%d", path, line)
		require.Len(t, obj, 1, "%s:%d: want exactly one key", path, line)
		for key, val := range obj {
			switch key {
			case "eof":
				ended = true
			case "cut":
				var frame bytes.Buffer
				require.NoError(t, enc.Encode(&frame, eventMessage(bedrock.EventContentBlockDelta, []byte(`{"contentBlockIndex":0,"delta":{"text":"never seen"}}`))))
				body.Write(frame.Bytes()[:frame.Len()/2])
				ended = true
			case "exception":
				var ex struct{ Type, Message string }
				require.NoError(t, json.Unmarshal(val, &ex), "%s:%d", path, line)
				var msg eventstream.Message
				msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
				msg.Headers.Set(":exception-type", eventstream.StringValue(ex.Type))
				msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
				payload, err := json.Marshal(bedrock.ErrorBody{Message: ex.Message})
				require.NoError(t, err)
				msg.Payload = payload
				require.NoError(t, enc.Encode(&body, msg))
				ended = true
			default:
				require.NoError(t, enc.Encode(&body, eventMessage(key, val)))
			}
		}
	}
	require.NoError(t, sc.Err())
	require.True(t, ended, "%s: the last line must be eof, cut or exception", path)
	return body.Bytes()
}

func eventMessage(typ string, payload []byte) eventstream.Message {
	var msg eventstream.Message
	msg.Headers.Set(":message-type", eventstream.StringValue("event"))
	msg.Headers.Set(":event-type", eventstream.StringValue(typ))
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	msg.Payload = payload
	return msg
}

// fixtureEvents decodes a fixture's body into its events, up to the end or the first error.
func fixtureEvents(t testing.TB, path string) []bedrock.StreamEvent {
	t.Helper()
	es := bedrock.NewEventStream(io.NopCloser(bytes.NewReader(fixtureBody(t, path))))
	defer es.Close()
	var evs []bedrock.StreamEvent
	for {
		ev, err := es.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, ev)
	}
}

// sliceEvents feeds a fixed list of events, then err (io.EOF when nil).
type sliceEvents struct {
	evs []bedrock.StreamEvent
	err error
}

func (s *sliceEvents) Next() (bedrock.StreamEvent, error) {
	if len(s.evs) == 0 {
		if s.err == nil {
			return bedrock.StreamEvent{}, io.EOF
		}
		return bedrock.StreamEvent{}, s.err
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}

// run drives a Machine over src with Step, as the server does, and returns every event it
// produced and the error that ended the stream (nil for a complete one).
func run(t testing.TB, m *stream.Machine, src stream.Events) ([]chat.Event, error) {
	t.Helper()
	var all []chat.Event
	for i := 0; ; i++ {
		require.Less(t, i, 1<<20, "Step does not end")
		var err error
		all, err = m.Step(src, all)
		if errors.Is(err, io.EOF) {
			return all, nil
		}
		if err != nil {
			return all, err
		}
	}
}

// streamError is how a stream that failed after it started ends for the client.
type streamError struct{ code, message string }

// clientError is the end of the stream for err (nil for nil), with a test-local copy of
// the server's code mapping (docs/PROTOCOL.md 5), so goldens show what a client would read.
func clientError(t testing.TB, err error) *streamError {
	t.Helper()
	var apiErr *bedrock.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr):
		code := "unavailable"
		switch apiErr.Code {
		case bedrock.CodeThrottling, bedrock.CodeModelNotReady, bedrock.CodeServiceQuotaExceeded:
			code = "resource_exhausted"
		case bedrock.CodeValidation:
			code = "invalid_argument"
		case bedrock.CodeModelTimeout:
			code = "deadline_exceeded"
		case bedrock.CodeAccessDenied:
			code = "internal"
		}
		return &streamError{code, apiErr.Message}
	case errors.Is(err, fault.ErrUpstream): // truncated, malformed_*, protocol breaks
		return &streamError{"unavailable", err.Error()}
	case errors.Is(err, bedrock.ErrTransport):
		return &streamError{"unavailable", "the upstream model service failed"}
	}
	t.Fatalf("unexpected stream error %T: %v", err, err)
	return nil
}

// renderJSONL is the JSONL stream a client gets: evs as the server writes them, then the
// error line if the stream failed.
func renderJSONL(evs []chat.Event, fail *streamError) []byte {
	var b []byte
	for i := range evs {
		b = nirmata.AppendLine(b, &evs[i])
	}
	if fail != nil {
		b = nirmata.AppendErrorLine(b, fail.code, fail.message)
	}
	return b
}

// renderChunked is the chunked stream a client gets.
func renderChunked(prefix string, evs []chat.Event, fail *streamError) []byte {
	c := nirmata.NewChunker(prefix)
	var b []byte
	for i := range evs {
		b = c.Append(b, &evs[i])
	}
	if fail != nil {
		b = c.AppendError(b, fail.code, fail.message)
	}
	return b
}

// chunkLine is one line of the chunked format.
type chunkLine struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data string `json:"data"`
}

func parseChunked(t testing.TB, b []byte) []chunkLine {
	t.Helper()
	var lines []chunkLine
	for i, raw := range bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'}) {
		if len(raw) == 0 && len(b) == 0 {
			break
		}
		var l chunkLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&l), "chunked line %d: %s", i, raw)
		lines = append(lines, l)
	}
	return lines
}

// toolStartCall decodes the data of a ToolStart line.
func toolStartCall(t testing.TB, data string) (id, name, args string) {
	t.Helper()
	var v struct {
		ToolCall struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_call"`
	}
	require.NoError(t, json.Unmarshal([]byte(data), &v), "ToolStart data %s", data)
	require.Equal(t, "function", v.ToolCall.Type, "ToolStart data %s", data)
	return v.ToolCall.ID, v.ToolCall.Function.Name, v.ToolCall.Function.Arguments
}

func str(s string) *string { return &s }

// Client event builders for expectations.
func content(text string) chat.Event { return chat.Event{Kind: chat.EventContent, Text: text} }

// answer is a fragment of the synthetic answer tool's input, passed on as content.
func answer(text string) chat.Event {
	return chat.Event{Kind: chat.EventContent, Text: text, Answer: true}
}

func header(index int, id, name string) chat.Event {
	return chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{ID: id, Type: "function", Name: name}}
}

func fragment(index int, args string) chat.Event {
	return chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{Arguments: args}}
}

func toolEnd(index int) chat.Event { return chat.Event{Kind: chat.EventToolCallEnd, Index: index} }

func done(finish chat.FinishReason, stopReason string, usage chat.Usage) chat.Event {
	return chat.Event{Kind: chat.EventDone, Finish: finish, StopReason: stopReason, Usage: usage}
}

// Bedrock event builders for hand-written sequences.
func evMessageStart() bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventMessageStart, MessageStart: &bedrock.MessageStartEvent{Role: "assistant"}}
}

func evText(block int, text string) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{
		ContentBlockIndex: block, Delta: bedrock.ContentBlockDelta{Text: str(text)}}}
}

func evToolStart(block int, id, name string) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventContentBlockStart, ContentBlockStart: &bedrock.ContentBlockStartEvent{
		ContentBlockIndex: block, Start: bedrock.ContentBlockStart{ToolUse: &bedrock.ToolUseBlockStart{ToolUseID: id, Name: name}}}}
}

func evToolInput(block int, input string) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{
		ContentBlockIndex: block, Delta: bedrock.ContentBlockDelta{ToolUse: &bedrock.ToolUseDelta{Input: input}}}}
}

func evStop(block int) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventContentBlockStop, ContentBlockStop: &bedrock.ContentBlockStopEvent{ContentBlockIndex: block}}
}

func evMessageStop(reason string) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventMessageStop, MessageStop: &bedrock.MessageStopEvent{StopReason: reason}}
}

func evMetadata(in, out int32) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventMetadata, Metadata: &bedrock.MetadataEvent{
		Usage: &bedrock.TokenUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}}}
}
