package bedrock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unmarshalEvent decodes an event payload as decodeEvent did before eventDecoder, with
// json.Unmarshal and Lenient: the reference decodeEvent is held to.
func unmarshalEvent(typ string, payload []byte) (StreamEvent, error) {
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
	if err := json.Unmarshal(payload, dst, Lenient); err != nil {
		return StreamEvent{}, err
	}
	return ev, nil
}

// eventTypes are the event types decodeEvent decodes, and one it passes by.
var eventTypes = []string{EventMessageStart, EventContentBlockStart, EventContentBlockDelta,
	EventContentBlockStop, EventMessageStop, EventMetadata, "someFutureEvent"}

// checkEventDecode requires decodeEvent to decode payload as unmarshalEvent does: the same
// event, or an error from both, decodeEvent's an ErrTransport naming the event type. The
// decoders are pooled, so each check also decodes with one that decoded (or failed on) the
// payloads before.
func checkEventDecode(t *testing.T, typ string, payload []byte) {
	t.Helper()
	want, wantErr := unmarshalEvent(typ, payload)
	original := bytes.Clone(payload)
	got, err := decodeEvent(typ, payload)
	require.Equal(t, original, payload, "the payload, a pooled frame buffer, is only read")
	if wantErr != nil {
		require.Error(t, err, "%s %q: json.Unmarshal fails (%v), decodeEvent decoded %+v", typ, payload, wantErr, got)
		require.ErrorIs(t, err, ErrTransport)
		require.Contains(t, err.Error(), "decode "+typ+" event: ")
		return
	}
	require.NoError(t, err, "%s %q", typ, payload)
	require.Equal(t, want, got, "%s %q", typ, payload)
}

// fieldPaths are the members every event type declares, by their path from the event's
// object: each is decoded with every kind of value in eventCorpus.
var fieldPaths = map[string][]string{
	EventMessageStart:      {"role"},
	EventContentBlockStart: {"contentBlockIndex", "start", "start.toolUse", "start.toolUse.toolUseId", "start.toolUse.name"},
	EventContentBlockDelta: {"contentBlockIndex", "delta", "delta.text", "delta.toolUse", "delta.toolUse.input",
		"delta.reasoningContent", "delta.reasoningContent.text", "delta.reasoningContent.signature", "delta.reasoningContent.redactedContent"},
	EventContentBlockStop: {"contentBlockIndex"},
	EventMessageStop:      {"stopReason", "additionalModelResponseFields"},
	EventMetadata: {"usage", "usage.inputTokens", "usage.outputTokens", "usage.totalTokens", "usage.cacheReadInputTokens",
		"usage.cacheWriteInputTokens", "metrics", "metrics.latencyMs"},
}

// fullEvents set every declared member of each event type, with unknown members beside
// them at every level.
var fullEvents = map[string]string{
	EventMessageStart:      `{"role":"assistant","p":"abc"}`,
	EventContentBlockStart: `{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"get","type":"x"},"image":{}},"p":"abc"}`,
	EventContentBlockDelta: `{"contentBlockIndex":1,"delta":{"text":"Hi","toolUse":{"input":"{\"a\":"},"reasoningContent":{"text":"hm","signature":"c2ln","redactedContent":"cmVk","x":[1]},"citation":{"title":"t"}},"p":"abc"}`,
	EventContentBlockStop:  `{"contentBlockIndex":3,"p":"abc"}`,
	EventMessageStop:       `{"stopReason":"end_turn","additionalModelResponseFields":{ "stop_sequence" : null, "n": 1.50 },"p":"abc"}`,
	EventMetadata:          `{"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15,"cacheReadInputTokens":7,"cacheWriteInputTokens":8,"cacheDetails":[]},"metrics":{"latencyMs":812,"timeToFirstByteMs":3},"trace":{"guardrail":{}},"performanceConfig":{"latency":"standard"},"serviceTier":{"type":"default"},"p":"abc"}`,
}

// values are JSON values of every kind and edge: each declared member is decoded with each.
var values = []string{
	`null`, `true`, `false`, `{}`, `[]`, `[1,"a"]`, `{"x":1}`,
	`""`, `"text"`, `"Line\nbreak \"quoted\" \\ \/ \t \u00e9 \ud83d\ude00"`, `"lone \ud800 surrogate"`,
	"\"invalid \xff\xfe UTF-8\"", `"日本語"`, `"1"`,
	`0`, `-0`, `1`, `-1`, `1.5`, `1.0`, `1e2`, `-1E-2`,
	`2147483647`, `2147483648`, `-2147483648`, `-2147483649`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
	`123456789012345678901234567890`,
}

// nest writes value at path (members separated by dots) as a JSON object.
func nest(path, value string) string {
	names := strings.Split(path, ".")
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, `{"%s":`, n)
	}
	b.WriteString(value)
	b.WriteString(strings.Repeat("}", len(names)))
	return b.String()
}

// eventCorpus is what TestDecodeEventMatchesUnmarshal decodes, and FuzzDecodeEvent's seeds.
func eventCorpus() (corpus []struct{ typ, payload string }) {
	add := func(typ, payload string) {
		corpus = append(corpus, struct{ typ, payload string }{typ, payload})
	}
	for _, typ := range eventTypes {
		for _, p := range []string{
			``, ` `, `null`, ` null `, `{}`, "\t{ }\n", `[]`, `1`, `"s"`, `true`,
			`{} {}`, `{}x`, `{`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`,
			`{"unknown":{"deep":[[[{"x":null}]]],"more":"\u0000"}}`,
		} {
			add(typ, p)
		}
	}
	for typ, full := range fullEvents {
		add(typ, full)
		add(typ, " \r\n"+full+" \t")
		add(typ, full[:len(full)/2]) // cut short
		for _, path := range fieldPaths[typ] {
			for _, v := range values {
				add(typ, nest(path, v))
				// After the full event, the member again: objects merge, other values
				// are replaced.
				add(typ, full[:len(full)-1]+","+nest(path, v)[1:])
			}
			// A name matches only as written: escapes are read, case is not ignored.
			first, _, _ := strings.Cut(path, ".")
			add(typ, strings.Replace(full, `"`+first+`"`, `"\u00`+fmt.Sprintf("%x", first[0])+first[1:]+`"`, 1))
			add(typ, strings.Replace(full, `"`+first+`"`, `"`+strings.ToUpper(first[:1])+first[1:]+`"`, 1))
			add(typ, strings.Replace(full, `"`+first+`"`, "\"\xff"+first+`"`, 1))
		}
	}
	add(EventContentBlockDelta, `{"delta":{"toolUse":{"input":"a"}},"delta":{"toolUse":null},"delta":{"text":"b"}}`)
	add(EventContentBlockDelta, `{"delta":{"reasoningContent":{"text":"a"}},"delta":{"reasoningContent":{"signature":"s"}}}`)
	add(EventMetadata, `{"usage":{"inputTokens":1},"usage":{"outputTokens":2},"metrics":null}`)
	add(EventMessageStop, `{"additionalModelResponseFields":{"a":[1,2]},"additionalModelResponseFields":"x"}`)
	add(EventMessageStop, "{\"additionalModelResponseFields\":{\"\xff\":\"\xfe\"}}")
	return corpus
}

// TestDecodeEventMatchesUnmarshal: decodeEvent decodes every event type as json.Unmarshal
// with Lenient does, member by member: every declared member with values of every kind,
// nulls, escapes, invalid UTF-8, numbers at and past their type's bounds, unknown and
// repeated members, empty objects, and payloads that are not JSON.
func TestDecodeEventMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	corpus := eventCorpus()
	require.Greater(t, len(corpus), 1000)
	for _, c := range corpus {
		checkEventDecode(t, c.typ, []byte(c.payload))
	}
}

// TestDecodeEventReadsEveryMember: the full events decode with every declared member set,
// so the equivalence above is not that of two decoders that both read nothing.
func TestDecodeEventReadsEveryMember(t *testing.T) {
	t.Parallel()
	decode := func(typ string) StreamEvent {
		ev, err := decodeEvent(typ, []byte(fullEvents[typ]))
		require.NoError(t, err)
		return ev
	}
	text, signature, redacted := "hm", "c2ln", "cmVk"
	hi := "Hi"
	assert.Equal(t, &MessageStartEvent{Role: RoleAssistant}, decode(EventMessageStart).MessageStart)
	assert.Equal(t, &ContentBlockStartEvent{ContentBlockIndex: 2, Start: ContentBlockStart{
		ToolUse: &ToolUseBlockStart{ToolUseID: "tooluse_1", Name: "get"}}}, decode(EventContentBlockStart).ContentBlockStart)
	assert.Equal(t, &ContentBlockDeltaEvent{ContentBlockIndex: 1, Delta: ContentBlockDelta{
		Text:             &hi,
		ToolUse:          &ToolUseDelta{Input: `{"a":`},
		ReasoningContent: &ReasoningDelta{Text: &text, Signature: &signature, RedactedContent: &redacted},
	}}, decode(EventContentBlockDelta).ContentBlockDelta)
	assert.Equal(t, &ContentBlockStopEvent{ContentBlockIndex: 3}, decode(EventContentBlockStop).ContentBlockStop)
	assert.Equal(t, &MessageStopEvent{StopReason: StopEndTurn,
		AdditionalModelResponseFields: []byte(`{ "stop_sequence" : null, "n": 1.50 }`)}, decode(EventMessageStop).MessageStop)
	assert.Equal(t, &MetadataEvent{
		Usage:   &TokenUsage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, CacheReadInputTokens: 7, CacheWriteInputTokens: 8},
		Metrics: &Metrics{LatencyMs: 812},
	}, decode(EventMetadata).Metadata)
}

// An error names the member and what it holds, and never the payload's text.
func TestDecodeEventErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ typ, payload, want string }{
		{EventContentBlockDelta, `{"delta":{"toolUse":{"input":{"secret":1}}}}`, `want a string at "/delta/toolUse/input", got an object`},
		{EventMetadata, `{"usage":{"inputTokens":2147483648}}`, `want an integer in range at "/usage/inputTokens", got 2147483648`},
		{EventContentBlockStop, `{"contentBlockIndex":123456789012345678901234567890}`, `got a number of 30 characters`},
		{EventContentBlockStart, `{"start":["secret"]}`, `want an object at "/start", got an array`},
		{EventMessageStart, `{} {"role":"secret"}`, `another value after the event's`},
		{EventMessageStop, ``, `unexpected EOF`},
	} {
		_, err := decodeEvent(c.typ, []byte(c.payload))
		require.ErrorIs(t, err, ErrTransport, c.payload)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "secret")
	}
	_, err := decodeEvent(EventMessageStop, nil)
	assert.False(t, errors.Is(err, io.EOF), "an empty payload is not the stream's clean end")
}

// FuzzDecodeEvent holds decodeEvent to json.Unmarshal with Lenient on any payload of any
// event type.
func FuzzDecodeEvent(f *testing.F) {
	for _, c := range eventCorpus() {
		f.Add(uint8(slices.Index(eventTypes, c.typ)), []byte(c.payload))
	}
	f.Fuzz(func(t *testing.T, typ uint8, payload []byte) {
		checkEventDecode(t, eventTypes[int(typ)%len(eventTypes)], payload)
	})
}
