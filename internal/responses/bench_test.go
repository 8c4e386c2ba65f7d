package responses

import (
	"os"
	"testing"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// BenchmarkDecodeCodexRequest decodes Codex's second turn (testdata/codex_turn2.json): 13
// tools with a namespace and a hosted one, seven items.
func BenchmarkDecodeCodexRequest(b *testing.B) {
	body, err := os.ReadFile("testdata/codex_turn2.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		c, err := decodeRequest(body, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.req.Messages) != 6 || len(c.req.Tools) != 12 {
			b.Fatalf("decoded %d messages, %d tools", len(c.req.Messages), len(c.req.Tools))
		}
	}
}

var benchHead = head{requestID: "0123456789abcdef", createdAt: 1795651008, model: "us.anthropic.claude-sonnet-4-20250514-v1:0"}

// benchStreamEvents are the events of the chat surface's stream benchmark
// (internal/openai): text in 7 fragments, two tool calls whose arguments come in 3
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
// streamer per stream, for a request with two function tools.
func BenchmarkAppendStream(b *testing.B) {
	c, err := decodeRequest([]byte(`{"input":"go","store":false,"tools":[{"type":"function","name":"get_weather"},{"type":"function","name":"search_docs"}]}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		s := c.streamer(benchHead, "")
		buf = buf[:0]
		for i := range benchStreamEvents {
			buf = s.appendEvent(buf, &benchStreamEvents[i])
		}
	}
	b.SetBytes(int64(len(buf)))
}
