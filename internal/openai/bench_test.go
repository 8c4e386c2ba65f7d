package openai

import (
	"os"
	"testing"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// agentTurn is a typical agent turn in OpenAI's form: a system prompt, an assistant turn
// with two tool calls and their results, three tools with schemas, sampling settings, and a
// stream that asks for usage (the Nirmata surface's agent turn, testdata of
// internal/nirmata, with stream_options).
func agentTurn(b *testing.B) []byte {
	b.Helper()
	body, err := os.ReadFile("testdata/agent_turn.json")
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := agentTurn(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		c, err := decodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		if !c.stream || !c.includeUsage || len(c.req.Messages) != 6 || len(c.req.Tools) != 3 {
			b.Fatalf("decoded %+v", c)
		}
	}
}

var benchHead = head{ID: "chatcmpl-0123456789abcdef", Created: 1795651008, Model: "us.anthropic.claude-sonnet-4-20250514-v1:0"}

func BenchmarkAppendCompletion(b *testing.B) {
	resp := &chat.Response{
		Text:      "I'll save the policy for you.",
		ToolCalls: []chat.ToolCall{{ID: "tooluse_abc", Name: "save_policy", Arguments: `{"filename":"policy.yaml"}`}},
		Finish:    chat.FinishToolCalls, Usage: chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150},
		Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", StopReason: "tool_use", LatencyMs: 812, RequestID: "0123456789abcdef",
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendCompletion(buf[:0], benchHead, resp)
	}
}

// BenchmarkAppendChunk is one content chunk of a stream that asked for usage (each chunk
// carries "usage":null).
func BenchmarkAppendChunk(b *testing.B) {
	ch := newChunker(benchHead, true)
	ev := &chat.Event{Kind: chat.EventContent, Text: "Analyzing your request..."}
	buf := ch.appendEvent(make([]byte, 0, 512), ev) // the role chunk is written once, first
	b.ReportAllocs()
	for b.Loop() {
		buf = ch.appendEvent(buf[:0], ev)
	}
}

// benchStreamEvents are the chat events of the end-to-end benchmark's stream (scripts/bench-e2e.sh,
// the simulator's answer): text in 7 fragments, two tool calls whose arguments come in 3
// fragments each, and the end with usage. 20 events, 19 SSE events with the role chunk,
// [DONE] not counted.
var benchStreamEvents = func() []chat.Event {
	var evs []chat.Event
	for _, t := range []string{"I'll ", "call ", "get_weat", "her ", "and ", "search_d", "ocs."} {
		evs = append(evs, chat.Event{Kind: chat.EventContent, Text: t})
	}
	calls := []struct {
		id, name string
		args     []string
	}{
		{"tooluse_28b1zt6dPQiy9BirJ6pXL9", "get_weather", []string{`{"city":`, `"example`, `"}`}},
		{"tooluse_zu8uCLoJJHx3tTnkI81Qsq", "search_docs", []string{`{"query"`, `:"exampl`, `e"}`}},
	}
	for i, c := range calls {
		evs = append(evs, chat.Event{Kind: chat.EventToolCall, Index: i, ToolCall: chat.ToolCall{ID: c.id, Name: c.name}})
		for _, a := range c.args {
			evs = append(evs, chat.Event{Kind: chat.EventToolCall, Index: i, ToolCall: chat.ToolCall{Arguments: a}})
		}
		evs = append(evs, chat.Event{Kind: chat.EventToolCallEnd, Index: i})
	}
	return append(evs, chat.Event{Kind: chat.EventDone, Finish: chat.FinishToolCalls,
		Usage: chat.Usage{PromptTokens: 131, CompletionTokens: 18, TotalTokens: 149}})
}()

// BenchmarkAppendStream encodes a whole stream's events, as the handler does, with a new
// chunker per stream.
func BenchmarkAppendStream(b *testing.B) {
	buf := make([]byte, 0, 8<<10)
	b.ReportAllocs()
	for b.Loop() {
		ch := newChunker(benchHead, true)
		buf = buf[:0]
		for i := range benchStreamEvents {
			buf = ch.appendEvent(buf, &benchStreamEvents[i])
		}
	}
	b.SetBytes(int64(len(buf)))
}
