package bedrock

import (
	"os"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireRoundTrip: what the wire structs decode, they encode back to the same JSON,
// raw values (tool inputs, schemas) byte for byte, and absent members stay absent while
// present empty ones ({"auto":{}}, {"text":""}) stay present.
func TestWireRoundTrip(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"messages":[{"role":"user","content":[{"text":"hi <&> é"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object","properties":{"n":{"maximum":12345678901234567890}}}}}}],"toolChoice":{"auto":{}}}}`,
		`{"messages":[{"role":"assistant","content":[{"text":""},{"toolUse":{"toolUseId":"t1","name":"a","input":{"x":1.50}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"json":{"ok":true}}],"status":"error"}}]}],"inferenceConfig":{"maxTokens":0,"temperature":0}}`,
		`{"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]}],"system":[{"text":"s"}]}`,
		`{"messages":[{"role":"user","content":[{"document":{"format":"pdf","name":"report (2)","source":{"bytes":"JVBERi0xLjQK"}}},{"text":"Attached: report (2)"}]}]}`,
	} {
		var req ConverseRequest
		require.NoError(t, json.Unmarshal([]byte(body), &req), body)
		out, err := MarshalRequest(&req)
		require.NoError(t, err)
		assert.Equal(t, body, string(out))
	}
}

func BenchmarkMarshalRequest(b *testing.B) {
	raw, err := os.ReadFile("../translate/testdata/gollm_streaming_history.converse.golden.json")
	require.NoError(b, err)
	var req ConverseRequest
	require.NoError(b, json.Unmarshal(raw, &req))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MarshalRequest(&req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEvent decodes one payload of each event kind, as Bedrock sends them (the
// "p" member is the padding Bedrock adds to hide the length of what is streamed).
func BenchmarkDecodeEvent(b *testing.B) {
	for _, c := range []struct{ name, typ, payload string }{
		{"messageStart", EventMessageStart, `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN","role":"assistant"}`},
		{"contentBlockStart", EventContentBlockStart, `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ","start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_abc"}}}`},
		{"textDelta", EventContentBlockDelta, `{"contentBlockIndex":0,"delta":{"text":"Hello there, "},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`},
		{"toolUseDelta", EventContentBlockDelta, `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}},"p":"abcdefghijklmnopqrstuvwxyzABCDEF"}`},
		{"reasoningDelta", EventContentBlockDelta, `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"The user wants\nthe weather."}},"p":"abcdefghijklmnopqrstuvwxyzAB"}`},
		{"contentBlockStop", EventContentBlockStop, `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`},
		{"messageStop", EventMessageStop, `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ","stopReason":"tool_use"}`},
		{"metadata", EventMetadata, `{"metrics":{"latencyMs":1234},"p":"abcdefghijklmnop","usage":{"cacheReadInputTokens":2048,"cacheWriteInputTokens":0,"inputTokens":262,"outputTokens":41,"totalTokens":2351}}`},
	} {
		payload := []byte(c.payload)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeEvent(c.typ, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeConverse(b *testing.B) {
	body := []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"I'll call it."},{"toolUse":{"toolUseId":"tooluse_1","name":"get","input":{"n": 12345678901234567890, "s":"日本語 😀 <&>"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15},"metrics":{"latencyMs":812}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := json.Unmarshal(body, &ConverseResponse{}, Lenient); err != nil {
			b.Fatal(err)
		}
	}
}
