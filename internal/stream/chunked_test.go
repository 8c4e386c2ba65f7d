package stream

import (
	"testing"

	"github.com/stretchr/testify/require"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

func TestChunker(t *testing.T) {
	t.Parallel()
	usage := &llmgatewayv1.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}
	tests := []struct {
		name   string
		prefix string
		events []*llmgatewayv1.ChatStreamEvent
		want   string
	}{
		{
			name:   "ids without prefix; empty content writes nothing",
			events: []*llmgatewayv1.ChatStreamEvent{contentEvent("a"), contentEvent(""), contentEvent("b"), doneEvent("stop", nil)},
			want: `{"id":"1","type":"Text","data":"a"}
{"id":"2","type":"Text","data":"b"}
{"id":"3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"stop\"}"}
`,
		},
		{
			name:   "ToolStart at the end marker; nothing after Done",
			prefix: "r",
			events: []*llmgatewayv1.ChatStreamEvent{
				headerEvent(0, "t0", "f"), fragmentEvent(0, `{"a":`), fragmentEvent(0, `1}`), toolCallEndEvent(0),
				contentEvent("after"), doneEvent("tool_calls", usage), contentEvent("late"), ErrorEvent("unavailable", "late"),
			},
			want: `{"id":"r-1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t0\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}}"}
{"id":"r-2","type":"Text","data":"after"}
{"id":"r-3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}"}
`,
		},
		{
			name:   "without end markers every ToolStart waits for done, in index order",
			prefix: "r",
			events: []*llmgatewayv1.ChatStreamEvent{
				headerEvent(0, "t0", "f"), headerEvent(1, "t1", "g"), fragmentEvent(1, `{}`), fragmentEvent(0, `{"x":true}`),
				doneEvent("tool_calls", nil),
			},
			want: `{"id":"r-1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t0\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":true}\"}}}"}
{"id":"r-2","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}}"}
{"id":"r-3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\"}"}
`,
		},
		{
			name:   "invalid JSON at the end marker waits for done, then goes as is",
			prefix: "r",
			events: []*llmgatewayv1.ChatStreamEvent{
				headerEvent(0, "t0", "f"), fragmentEvent(0, `{"a":`), toolCallEndEvent(0),
				headerEvent(1, "t1", "g"), fragmentEvent(1, `{}`), toolCallEndEvent(1),
				doneEvent("tool_calls", nil),
			},
			want: `{"id":"r-1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}}"}
{"id":"r-2","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t0\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}}"}
{"id":"r-3","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\"}"}
`,
		},
		{
			name:   "error drops pending calls; nothing after it",
			prefix: "r",
			events: []*llmgatewayv1.ChatStreamEvent{
				headerEvent(0, "t0", "f"), fragmentEvent(0, `{}`), ErrorEvent("unavailable", "boom"), doneEvent("stop", nil),
			},
			want: `{"id":"r-1","type":"Error","data":"boom"}
`,
		},
		{
			name:   "error without a message says its code: the deployed client ignores an empty Error",
			events: []*llmgatewayv1.ChatStreamEvent{ErrorEvent("unavailable", "")},
			want: `{"id":"1","type":"Error","data":"unavailable"}
`,
		},
		{
			name:   "error with neither",
			events: []*llmgatewayv1.ChatStreamEvent{{Type: TypeError}},
			want: `{"id":"1","type":"Error","data":"upstream error"}
`,
		},
		{
			name:   "header carrying arguments; nil and unknown events write nothing",
			events: []*llmgatewayv1.ChatStreamEvent{nil, {Type: "mystery"}, {Type: TypeToolCall, ToolCall: &llmgatewayv1.ToolCall{Id: "t", Function: &llmgatewayv1.FunctionCall{Name: "f", Arguments: `{"k":"v"}`}}}, toolCallEndEvent(0)},
			want: `{"id":"1","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"t\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"k\\\":\\\"v\\\"}\"}}}"}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, string(renderChunked(tt.prefix, tt.events)))
		})
	}
}
