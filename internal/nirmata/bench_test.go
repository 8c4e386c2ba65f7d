package nirmata

import (
	"testing"

	"github.com/nirmata/llm-gateway/internal/chat"
)

func BenchmarkDecodeRequest(b *testing.B) {
	body := agentTurnBody(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	resp := &chat.Response{
		Text:      "I'll save the policy for you.",
		ToolCalls: []chat.ToolCall{{ID: "tooluse_abc", Name: "save_policy", Arguments: `{"filename":"policy.yaml"}`}},
		Finish:    chat.FinishToolCalls, Usage: chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150},
		Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", StopReason: "tool_use", LatencyMs: 812, RequestID: "0123456789abcdef",
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendResponse(buf[:0], resp)
	}
}

func BenchmarkAppendLine(b *testing.B) {
	ev := &chat.Event{Kind: chat.EventContent, Text: "Analyzing your request..."}
	buf := make([]byte, 0, 256)
	var l lineWriter // as a stream writes its lines
	b.ReportAllocs()
	for b.Loop() {
		buf = l.line(buf[:0], ev)
	}
}
