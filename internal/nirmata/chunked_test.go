package nirmata

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
)

type streamError struct{ code, message string }

func textEvent(text string) chat.Event { return chat.Event{Kind: chat.EventContent, Text: text} }

func header(index int, id, name string) chat.Event {
	return chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{ID: id, Type: "function", Name: name}}
}

func fragment(index int, args string) chat.Event {
	return chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{Arguments: args}}
}

func toolEnd(index int) chat.Event { return chat.Event{Kind: chat.EventToolCallEnd, Index: index} }

func done(finish chat.FinishReason, usage chat.Usage) chat.Event {
	return chat.Event{Kind: chat.EventDone, Finish: finish, Usage: usage}
}

func TestChunker(t *testing.T) {
	t.Parallel()
	usage := chat.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}
	tests := []struct {
		name   string
		prefix string
		events []chat.Event
		fail   *streamError // appended after events
		after  []chat.Event // appended after fail
		want   string
	}{
		{
			name:   "ids without prefix; empty content writes nothing",
			events: []chat.Event{textEvent("a"), textEvent(""), textEvent("b"), done(chat.FinishStop, chat.Usage{})},
			want: `{"id":"1","type":"Text","data":"a"}
{"id":"2","type":"Text","data":"b"}
{"id":"3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"stop\"}"}
`,
		},
		{
			name:   "ToolStart at the end marker; nothing after Done",
			prefix: "r",
			events: []chat.Event{
				header(0, "t0", "f"), fragment(0, `{"a":`), fragment(0, `1}`), toolEnd(0),
				textEvent("after"), done(chat.FinishToolCalls, usage), textEvent("late"),
			},
			fail: &streamError{"unavailable", "late"},
			want: `{"id":"r-1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t0\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}}"}
{"id":"r-2","type":"Text","data":"after"}
{"id":"r-3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}"}
`,
		},
		{
			name:   "without end markers every ToolStart waits for done, in index order",
			prefix: "r",
			events: []chat.Event{
				header(0, "t0", "f"), header(1, "t1", "g"), fragment(1, `{}`), fragment(0, `{"x":true}`),
				done(chat.FinishToolCalls, chat.Usage{}),
			},
			want: `{"id":"r-1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t0\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":true}\"}}}"}
{"id":"r-2","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}}"}
{"id":"r-3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\"}"}
`,
		},
		{
			name:   "invalid JSON at the end marker waits for done, then goes as is",
			prefix: "r",
			events: []chat.Event{
				header(0, "t0", "f"), fragment(0, `{"a":`), toolEnd(0),
				header(1, "t1", "g"), fragment(1, `{}`), toolEnd(1),
				done(chat.FinishToolCalls, chat.Usage{}),
			},
			want: `{"id":"r-1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}}"}
{"id":"r-2","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t0\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}}"}
{"id":"r-3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\"}"}
`,
		},
		{
			name:   "validation errors inside the ToolStart's tool_call (13.2)",
			prefix: "r",
			events: []chat.Event{
				header(0, "t0", "save_policy"),
				{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `{}`, ValidationErrors: []string{`/: missing required property "filename"`}}},
				toolEnd(0), done(chat.FinishToolCalls, chat.Usage{}),
			},
			want: `{"id":"r-1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t0\",\"type\":\"function\",\"function\":{\"name\":\"save_policy\",\"arguments\":\"{}\"},\"validation_errors\":[\"/: missing required property \\\"filename\\\"\"]}}"}
{"id":"r-2","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\"}"}
`,
		},
		{
			name:   "error drops pending calls; nothing after it",
			prefix: "r",
			events: []chat.Event{header(0, "t0", "f"), fragment(0, `{}`)},
			fail:   &streamError{"unavailable", "boom"},
			after:  []chat.Event{done(chat.FinishStop, chat.Usage{})},
			want: `{"id":"r-1","type":"Error","data":"boom"}
`,
		},
		{
			name: "error without a message says its code: the deployed client ignores an empty Error",
			fail: &streamError{"unavailable", ""},
			want: `{"id":"1","type":"Error","data":"unavailable"}
`,
		},
		{
			name: "error with neither",
			fail: &streamError{},
			want: `{"id":"1","type":"Error","data":"upstream error"}
`,
		},
		{
			name:   "header carrying arguments; events of no or an unknown kind write nothing",
			events: []chat.Event{{}, {Kind: 99}, {Kind: chat.EventToolCall, ToolCall: chat.ToolCall{ID: "t", Name: "f", Arguments: `{"k":"v"}`}}, toolEnd(0)},
			want: `{"id":"1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"k\\\":\\\"v\\\"}\"}}}"}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewChunker(tt.prefix)
			var b []byte
			for _, e := range tt.events {
				b = c.Append(b, &e)
			}
			if tt.fail != nil {
				b = c.AppendError(b, tt.fail.code, tt.fail.message)
			}
			for _, e := range tt.after {
				b = c.Append(b, &e)
			}
			require.Equal(t, tt.want, string(b))
		})
	}
}
