package bedrock

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
}

// Nesting past encoding/json's limit is left to it (which refuses it), and a payload of a
// million brackets does not overflow the stack.
func TestDecodeEventFastDepth(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10001, 1 << 20} {
		payload := `{"contentBlockIndex":1,"p":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
		var ev StreamEvent
		assert.False(t, decodeEventFast(EventContentBlockStop, []byte(payload), &ev), "depth %d", n)
	}
	ok := `{"contentBlockIndex":1,"p":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
	assert.True(t, checkAgainstReference(t, EventContentBlockStop, []byte(ok)))
}

func TestDecodeEventFastMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, seed := range eventSeeds {
		if checkAgainstReference(t, seed.typ, []byte(seed.payload)) {
			fast++
		}
	}
	assert.GreaterOrEqual(t, fast, 7, "the common shapes take the fast path")
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
