package anthropic

import (
	"os"
	"testing"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// agentTurn is a turn of Claude Code's tool loop: system blocks with cache points, an
// assistant turn with thinking, text and two calls, their results, four tools, thinking
// and context management, as a stream.
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
		c, err := decodeRequest(body, false)
		if err != nil {
			b.Fatal(err)
		}
		if !c.stream || len(c.req.Messages) != 5 || len(c.req.Tools) != 4 {
			b.Fatalf("decoded %+v", c)
		}
	}
}

var benchAnswer = answer{id: "msg_0123456789abcdef", model: "claude-sonnet-4-5-20250929"}

func BenchmarkAppendMessage(b *testing.B) {
	resp := &chat.Response{
		Reasoning: []chat.ReasoningBlock{{Text: "The test wants 3.", Signature: "EqQBCkYIBxgCKkBqZ3Vh9R2sJ1b4Yw0h8mXn3kQ5"}},
		Text:      "I'll fix Add.",
		ToolCalls: []chat.ToolCall{{ID: "toolu_01C29q90qw90lq917835lq9", Name: "Edit", Arguments: `{"file_path":"/repo/internal/x/x.go","old_string":"a + b","new_string":"a + b + 1"}`}},
		Finish:    chat.FinishToolCalls, StopReason: "tool_use", Usage: chat.Usage{PromptTokens: 4200, CompletionTokens: 60, CacheReadTokens: 4000},
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = benchAnswer.appendMessage(buf[:0], resp)
	}
}

// benchStreamEvents are the end-to-end benchmark's stream (the simulator's answer, as in
// internal/openai): text in 7 fragments, two tool calls whose arguments come in 3
// fragments each, and the end with usage.
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
// streamer per stream.
func BenchmarkAppendStream(b *testing.B) {
	buf := make([]byte, 0, 8<<10)
	b.ReportAllocs()
	for b.Loop() {
		s := &streamer{answer: benchAnswer}
		buf = buf[:0]
		for i := range benchStreamEvents {
			buf = s.appendEvent(buf, &benchStreamEvents[i])
		}
	}
	b.SetBytes(int64(len(buf)))
}
