package bedrock

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// referenceMarshal is encoding/json without HTML escaping: what AppendConverseRequest must
// write, byte for byte.
func referenceMarshal(t testing.TB, req *ConverseRequest) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(req))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// compacted round-trips req through encoding/json, so its raw fields hold compact JSON, as
// the translator writes them (goldens are indented).
func compacted(t testing.TB, req *ConverseRequest) *ConverseRequest {
	var out ConverseRequest
	require.NoError(t, json.Unmarshal(referenceMarshal(t, req), &out))
	return &out
}

func s(v string) *string { return &v }

func TestAppendConverseRequestMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tmax, temp, topP, tiny, huge := int32(512), 0.2, 0.9, 1e-7, 1e21
	cases := map[string]*ConverseRequest{
		"empty":      {},
		"nil slices": {Messages: []Message{{Role: RoleUser}}, ToolConfig: &ToolConfig{}},
		"every block": {
			Messages: []Message{
				{Role: RoleUser, Content: []ContentBlock{
					{Text: s("日本語 😀 <&> \"q\"\n\u2028")},
					{Image: &ImageBlock{Format: "png", Source: ImageSource{Bytes: []byte{0, 1, 2, 250}}}},
					{CachePoint: &CachePoint{Type: "default"}},
				}},
				{Role: RoleAssistant, Content: []ContentBlock{
					{ReasoningContent: json.RawMessage(`{"reasoningText":{"text":"hmm"}}`)},
					{ToolUse: &ToolUseBlock{ToolUseID: "t1", Name: "a", Input: json.RawMessage(`{"n":12345678901234567890}`)}},
					{ToolUse: &ToolUseBlock{ToolUseID: "t2", Name: "b"}},
				}},
				{Role: RoleUser, Content: []ContentBlock{
					{ToolResult: &ToolResultBlock{ToolUseID: "t1", Status: StatusSuccess, Content: []ToolResultContentBlock{
						{JSON: json.RawMessage(`{"ok":true}`)}, {Text: s("")}, {Image: &ImageBlock{Format: "jpeg"}},
					}}},
					{ToolResult: &ToolResultBlock{ToolUseID: "t2"}},
				}},
			},
			System:          []SystemBlock{{Text: "sys"}, {CachePoint: &CachePoint{Type: "default"}}, {}},
			InferenceConfig: &InferenceConfig{MaxTokens: &tmax, Temperature: &temp, TopP: &topP, StopSequences: []string{"END", ""}},
			ToolConfig: &ToolConfig{
				Tools:      []Tool{{ToolSpec: &ToolSpec{Name: "a", Description: "d", InputSchema: InputSchema{JSON: json.RawMessage(`{"type":"object"}`)}}}, {ToolSpec: &ToolSpec{Name: "b"}}, {CachePoint: &CachePoint{Type: "default"}}},
				ToolChoice: &ToolChoice{Tool: &SpecificToolChoice{Name: "a"}},
			},
			AdditionalModelRequestFields: json.RawMessage(`{"top_k":5}`),
		},
		"floats":          {InferenceConfig: &InferenceConfig{Temperature: &tiny, TopP: &huge}},
		"choice auto":     {ToolConfig: &ToolConfig{Tools: []Tool{}, ToolChoice: &ToolChoice{Auto: &struct{}{}, Any: &struct{}{}}}},
		"empty inference": {InferenceConfig: &InferenceConfig{}},
	}
	// Every request the translator's goldens hold.
	goldens, err := filepath.Glob("../translate/testdata/*.converse.golden.json")
	require.NoError(t, err)
	require.NotEmpty(t, goldens)
	for _, path := range goldens {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		var req ConverseRequest
		require.NoError(t, json.Unmarshal(raw, &req), path)
		cases[filepath.Base(path)] = &req
	}
	for name, req := range cases {
		req := compacted(t, req)
		got, err := AppendConverseRequest(nil, req)
		require.NoError(t, err, name)
		require.Equal(t, string(referenceMarshal(t, req)), string(got), name)
	}
}

func BenchmarkMarshalRequest(b *testing.B) {
	raw, err := os.ReadFile("../translate/testdata/gollm_streaming_history.converse.golden.json")
	if err != nil {
		b.Skip("golden missing: ", err)
	}
	var req ConverseRequest
	require.NoError(b, json.Unmarshal(raw, &req))
	creq := compacted(b, &req)
	b.Run("hand-written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MarshalRequest(creq); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			referenceMarshal(b, creq)
		}
	})
}
