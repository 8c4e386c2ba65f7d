package jsonapi

import (
	"encoding/json"
	"os"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	v1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

func jsonValid(b []byte) bool { return json.Valid(b) }

// agentTurn is a realistic agent request: 3 tools, 6 messages with a tool round trip. It
// uses only shapes protojson can also read (string content, string arguments), so the two
// decoders can be compared on the same bytes. The translator's benchmarks read it too.
const agentTurn = "testdata/agent_turn.json"

func agentTurnBody(tb testing.TB) []byte {
	tb.Helper()
	body, err := os.ReadFile(agentTurn)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkDecodeChatRequest compares the hand-written decoder with protojson on the same
// body. protojson is here for the report only: it cannot read the contract's polymorphic
// fields, so it is not an alternative.
func BenchmarkDecodeChatRequest(b *testing.B) {
	body := agentTurnBody(b)
	b.Run("jsonapi", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := DecodeChatRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		opts := protojson.UnmarshalOptions{DiscardUnknown: true}
		for b.Loop() {
			var req v1.ChatRequest
			if err := opts.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var benchResponse = &v1.ChatResponse{
	Message: "I'll save the policy for you. It requires the labels app.kubernetes.io/name and team on every Pod — 日本語 <&>.",
	ToolCalls: []*v1.ToolCall{{
		Id: "tooluse_abc", Type: "function",
		Function: &v1.FunctionCall{Name: "save_policy", Arguments: `{"filename":"require-labels.yaml","content":"apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n"}`},
	}},
	FinishReason: "tool_calls",
	Usage:        &v1.Usage{PromptTokens: 1200, CompletionTokens: 300, TotalTokens: 1500},
	Metadata: &v1.ResponseMetadata{
		Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", StopReason: "tool_use",
		LatencyMs: 812, RequestId: "2b1f7c3e-9d7a-4a0e-8f7e-0c1d2e3f4a5b",
	},
}

func BenchmarkAppendChatResponse(b *testing.B) {
	b.Run("jsonapi", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = AppendChatResponse(buf[:0], benchResponse)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		opts := protojson.MarshalOptions{UseProtoNames: true}
		for b.Loop() {
			if _, err := opts.Marshal(benchResponse); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAppendStreamEvent(b *testing.B) {
	events := []*v1.ChatStreamEvent{
		{Type: "content", Delta: "Analyzing your request: the policy needs two labels..."},
		{Type: "tool_call", Index: 0, ToolCall: &v1.ToolCall{Id: "tooluse_abc", Type: "function", Function: &v1.FunctionCall{Name: "save_policy"}}},
		{Type: "tool_call", Index: 0, ToolCall: &v1.ToolCall{Function: &v1.FunctionCall{Arguments: `{"filename":"require-`}}},
		{Type: "done", FinishReason: "tool_calls", Usage: &v1.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}},
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		for _, e := range events {
			buf = AppendStreamEvent(buf[:0], e)
		}
	}
}
