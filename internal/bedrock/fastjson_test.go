package bedrock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/jsontext"
)

var eventSeeds = []struct{ typ, payload string }{
	{EventContentBlockDelta, `{"contentBlockIndex":0,"delta":{"text":"Hello"},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"}`},
	{EventContentBlockDelta, `{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"n\":12345678901234567890,\"s\":\"日本語 😀 <&>\"}"}},"p":"abc"}`},
	{EventContentBlockDelta, `{"delta":{"text":"line\nbreak \"quoted\" \\ \/ \t \u00e9 \ud83d\ude00 \u2028"},"contentBlockIndex":10}`},
	{EventContentBlockDelta, ` { "contentBlockIndex" : 1 , "delta" : { "text" : "" } } `},
	{EventContentBlockDelta, `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hmm"}}}`},
	{EventContentBlockDelta, `{"contentBlockIndex":0,"delta":{"text":"\ud83d"}}`},
	{EventContentBlockDelta, `{"ContentBlockIndex":3,"delta":{"text":"case"}}`},
	{EventContentBlockDelta, `{"contentBlockIndex":0,"x":[1,-2.5e+3,true,false,null,{"y":"z"}],"delta":{"text":"a"}}`},
	{EventContentBlockDelta, `{"contentBlockIndex":0,"x":tru,"delta":{"text":"a"}}`},
	{EventContentBlockStart, `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_abc","name":"get_weather"}},"p":"xyz"}`},
	{EventContentBlockStop, `{"contentBlockIndex":1,"p":"xyz"}`},
	{EventContentBlockStop, `{"contentBlockIndex":01}`},
	{EventContentBlockStop, `{"contentBlockIndex":-1}`},
	{EventContentBlockStop, `{"contentBlockIndex":2147483647}`},
	{EventMessageStart, `{"role":"assistant","p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"}`},
	{EventMessageStart, `{"Role":"assistant"}`},
	{EventMessageStop, `{"stopReason":"tool_use","p":"abcdefghijkl"}`},
	{EventMessageStop, `{"stopReason":"end_turn","additionalModelResponseFields":{"stop_sequence": null, "x":[1,2]}}`},
	{EventMessageStop, `{"stopReason":"max_tokens","additionalModelResponseFields":null,"additionalModelResponseFields":"b"}`},
	{EventMetadata, `{"usage":{"inputTokens":812,"outputTokens":64,"totalTokens":876},"metrics":{"latencyMs":1234},"p":"abcdefghijklmnop"}`},
	{EventMetadata, `{"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2,"cacheReadInputTokens":100,"cacheWriteInputTokens":7},"trace":{"guardrail":{}},"usage":{"outputTokens":3}}`},
	{EventMetadata, `{"usage":null,"metrics":{"latencyMs":1.5}}`},
	{EventMetadata, `{"usage":{"inputTokens":2147483648}}`},
	{"someNewEvent", `{"x":1}`},
	// Escaped keys, invalid UTF-8 and surrogates decode as in encoding/json; keys that
	// match a field only ignoring case (ASCII or Unicode folding) are left to it.
	{EventContentBlockDelta, `{"\u0063ontentBlockIndex":4,"delta":{"te\u0078t":"esc"},"\u0070":1}`},
	{EventContentBlockDelta, "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"bad \xff\xfe \xed\xa0\x80 \\udc00\\ud800 end\"},\"p\":\"\xc3\"}"},
	{EventContentBlockStart, `{"contentBlockIndex":1,"ſtart":{"toolUse":{"toolUseId":"t","name":"n"}}}`},
	{EventMetadata, `{"usage":{"inputToKens":5}}`},
	{EventMetadata, `{"usage":{"inputTo\u212Aens":5}}`},
	{EventContentBlockDelta, `{""{}}`},
	{EventContentBlockDelta, `{"contentBlockIndex" 1}`},
	// Repeated keys: the last one wins, in the same structs.
	{EventContentBlockDelta, `{"contentBlockIndex":1,"contentBlockIndex":2,"delta":{"text":"a"},"delta":{"toolUse":{"input":"x"}},"delta":{"toolUse":{"input":"y"}}}`},
}

// Nesting past jsontext.MaxDepth is left to encoding/json, which accepts up to 10000
// levels and refuses more; a payload of a million brackets does not overflow the stack.
func TestDecodeEventFastDepth(t *testing.T) {
	t.Parallel()
	nested := func(n int) []byte {
		return []byte(`{"contentBlockIndex":1,"p":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	for _, n := range []int{jsontext.MaxDepth, 10001, 1 << 20} {
		var ev StreamEvent
		assert.False(t, decodeEventFast(EventContentBlockStop, nested(n), &ev), "depth %d", n+1)
	}
	ev, err := decodeEvent(EventContentBlockStop, nested(jsontext.MaxDepth))
	require.NoError(t, err)
	assert.Equal(t, 1, ev.ContentBlockStop.ContentBlockIndex)
	assert.True(t, checkAgainstReference(t, EventContentBlockStop, nested(jsontext.MaxDepth-1)))
}

func TestDecodeEventFastMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, seed := range eventSeeds {
		if checkAgainstReference(t, seed.typ, []byte(seed.payload)) {
			fast++
		}
	}
	assert.GreaterOrEqual(t, fast, 13, "the common shapes take the fast path")
}

// checkAgainstReference reports whether the fast path took the payload, failing the test
// if it did so differently from encoding/json.
func checkAgainstReference(t *testing.T, typ string, payload []byte) bool {
	t.Helper()
	var got StreamEvent
	got.Type = typ
	if !decodeEventFast(typ, payload, &got) {
		return false
	}
	want, err := decodeEventJSON(typ, payload)
	require.NoError(t, err, "the fast path took a payload encoding/json refuses: %s", payload)
	require.Empty(t, cmp.Diff(want, got), "payload %s", payload)
	return true
}

func FuzzDecodeEvent(f *testing.F) {
	for _, seed := range eventSeeds {
		f.Add(seed.typ, []byte(seed.payload))
	}
	f.Fuzz(func(t *testing.T, typ string, payload []byte) {
		checkAgainstReference(t, typ, payload)
	})
}

func BenchmarkDecodeEvent(b *testing.B) {
	payload := []byte(`{"contentBlockIndex":0,"delta":{"text":"Hello there, "},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeEvent(EventContentBlockDelta, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeEventJSON(EventContentBlockDelta, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var answerSeeds = []string{
	`{"output":{"message":{"role":"assistant","content":[{"text":"I'll call it."},{"toolUse":{"toolUseId":"tooluse_1","name":"get","input":{"n": 12345678901234567890, "s":"日本語 😀 <&>"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15},"metrics":{"latencyMs":812}}`,
	`{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"end_turn"}`,
	`{"output":{"message":{"role":"assistant","content":[{"text":"a\nb \u00e9"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2,"cacheReadInputTokens":100,"cacheWriteInputTokens":7},"metrics":{"latencyMs":5},"additionalModelResponseFields":{"x":[1,2]},"trace":null}`,
	`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"n","input":null}}]}},"stopReason":"tool_use"}`,
	`{"stopReason":"end_turn"}`,
	`{"output":null,"stopReason":"end_turn"}`,
	`{"output":{"message":{"role":"assistant","content":null}}}`,
	`{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hm"}}},{"text":"x"}]}}}`,
	`{"Output":{"message":{"role":"assistant","content":[{"text":"case"}]}}}`,
	`{"output":{"message":{"role":"assistant","content":[{"text":"x"}]},"message":{"content":[{"text":"y"}]}}}`,
	`{"usage":{"inputTokens":2147483648}}`,
	`{"usage":{"inputTokens":-1}}`,
	`{"metrics":{"latencyMs":1.5}}`,
	`{"output":{"message":{"content":[{"text":"a"}],"content":[{"toolUse":{"toolUseId":"t","name":"n","input":{}}}]}}}`,
	// Tool inputs keep invalid UTF-8 and whitespace as they came; escaped keys decode.
	"{\"output\":{\"message\":{\"content\":[{\"toolUse\":{\"toolUseId\":\"t\",\"name\":\"n\",\"input\":{ \"s\" : \"\xff\\ud800\" } }}]}}}",
	`{"\u006futput":{"message":{"role":"assistant","content":[{"text":"x"}]}},"stop\u0052eason":"end_turn"}`,
	`{"usage":{"inputTo\u212Aens":5}}`,
	`{""""}`,
	`{"stopReason","end_turn"}`,
	`{"usage":{"inputTokens":1},"usage":{"outputTokens":2},"metrics":{"latencyMs":1},"metrics":{"latencyMs":2}}`,
}

func checkAnswerAgainstReference(t *testing.T, body []byte) bool {
	t.Helper()
	var got ConverseResponse
	if !decodeConverseFast(body, &got) {
		return false
	}
	var want ConverseResponse
	require.NoError(t, json.Unmarshal(body, &want), "the fast path took an answer encoding/json refuses: %s", body)
	require.Empty(t, cmp.Diff(want, got), "answer %s", body)
	return true
}

func TestDecodeConverseFastMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, seed := range answerSeeds {
		if checkAnswerAgainstReference(t, []byte(seed)) {
			fast++
		}
	}
	assert.GreaterOrEqual(t, fast, 5, "the common shapes take the fast path")
	// And decodeConverse gives the reference's answer for every seed it takes or not, and
	// keeps none of the body: Converse reads answers into pooled buffers.
	for _, seed := range answerSeeds {
		var want ConverseResponse
		wantErr := json.Unmarshal([]byte(seed), &want)
		body := []byte(seed)
		got, err := decodeConverse(body)
		if wantErr != nil {
			assert.Error(t, err, seed)
			continue
		}
		require.NoError(t, err, seed)
		for i := range body {
			body[i] = 'x'
		}
		assert.Empty(t, cmp.Diff(&want, got), seed)
	}
}

func FuzzDecodeConverse(f *testing.F) {
	for _, seed := range answerSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswerAgainstReference(t, body)
	})
}

func BenchmarkDecodeConverse(b *testing.B) {
	body := []byte(answerSeeds[0])
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeConverse(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out ConverseResponse
			if err := json.Unmarshal(body, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
