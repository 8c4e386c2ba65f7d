package openai

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

var testHead = head{ID: "chatcmpl-abc", Created: 1767225600, Model: "sonnet"}

func TestAppendCompletion(t *testing.T) {
	t.Parallel()
	usage := chat.Usage{PromptTokens: 1200, CompletionTokens: 40, TotalTokens: 1240, CacheReadTokens: 1000}
	tests := []struct {
		name string
		resp chat.Response
		want string
	}{
		{"tool calls only: content null", chat.Response{
			ToolCalls: []chat.ToolCall{{ID: "tooluse_abc", Name: "save_policy", Arguments: `{"filename":"p.yaml"}`}},
			Finish:    chat.FinishToolCalls, Usage: usage},
			`{"id":"chatcmpl-abc","object":"chat.completion","created":1767225600,"model":"sonnet","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"tooluse_abc","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"p.yaml\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":0}},"service_tier":"default"}`},
		{"text, Bedrock's tier", chat.Response{Text: "Hi <there> & \u2028", Finish: chat.FinishStop, ServiceTier: "priority"},
			`{"id":"chatcmpl-abc","object":"chat.completion","created":1767225600,"model":"sonnet","choices":[{"index":0,"message":{"role":"assistant","content":"Hi <there> & \u2028","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":0}},"service_tier":"priority"}`},
		{"neither: content empty", chat.Response{Finish: chat.FinishLength},
			`{"id":"chatcmpl-abc","object":"chat.completion","created":1767225600,"model":"sonnet","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":0}},"service_tier":"default"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, string(appendCompletion(nil, testHead, &tt.resp)))
		})
	}
}

// streamEvents is a stream with text, a call with arguments in two fragments, and a call
// that streamed no arguments (the stream machine gives it "{}").
var streamEvents = []chat.Event{
	{Kind: chat.EventContent, Text: "Saving."},
	{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{ID: "tooluse_a", Name: "save"}},
	{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `{"f":`}},
	{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `1}`}},
	{Kind: chat.EventToolCallEnd, Index: 0},
	{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{ID: "tooluse_b", Name: "list"}},
	{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{Arguments: "{}"}}, // the machine's, for no arguments
	{Kind: chat.EventToolCallEnd, Index: 1},
	{Kind: chat.EventDone, Finish: chat.FinishToolCalls, Usage: chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150, CacheWriteTokens: 100}},
}

func TestChunker(t *testing.T) {
	t.Parallel()
	const h = `{"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1767225600,"model":"sonnet","choices":`
	chunks := []string{
		h + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]%s}`,
		h + `[{"index":0,"delta":{"content":"Saving."},"finish_reason":null}]%s}`,
		h + `[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"tooluse_a","type":"function","function":{"name":"save","arguments":""}}]},"finish_reason":null}]%s}`,
		h + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"f\":"}}]},"finish_reason":null}]%s}`,
		h + `[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}]%s}`,
		h + `[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"tooluse_b","type":"function","function":{"name":"list","arguments":""}}]},"finish_reason":null}]%s}`,
		h + `[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":null}]%s}`,
		h + `[{"index":0,"delta":{},"finish_reason":"tool_calls"}]%s}`,
	}
	sse := func(usage string, extra ...string) string {
		var b strings.Builder
		for _, c := range append(chunks, extra...) {
			b.WriteString("data: " + strings.ReplaceAll(c, "%s", usage) + "\n\n")
		}
		return b.String() + "data: [DONE]\n\n"
	}
	for _, tt := range []struct {
		name         string
		includeUsage bool
		want         string
	}{
		{"without usage: no usage member at all", false, sse("")},
		{"with usage: null on every chunk, then a usage chunk with no choices", true, sse(`,"usage":null`,
			h+`[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":100}}}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newChunker(testHead, tt.includeUsage)
			var got []byte
			for i := range streamEvents {
				got = c.appendEvent(got, &streamEvents[i])
			}
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// TestValidationErrorsStayOutOfOpenAIObjects: a call's violations never reach an OpenAI
// object, unary or streamed; only the x-gateway-tool-validation header says it
// (docs/PROTOCOL.md 13.2).
func TestValidationErrorsStayOutOfOpenAIObjects(t *testing.T) {
	t.Parallel()
	errs := []string{`/: missing required property "f"`}
	plain := chat.Response{ToolCalls: []chat.ToolCall{{ID: "t", Name: "save", Arguments: `{}`}}, Finish: chat.FinishToolCalls}
	annotated := plain
	annotated.ToolCalls = []chat.ToolCall{{ID: "t", Name: "save", Arguments: `{}`, ValidationErrors: errs}}
	annotated.ToolValidation = "invalid"
	assert.Equal(t, string(appendCompletion(nil, testHead, &plain)), string(appendCompletion(nil, testHead, &annotated)))

	events := slices.Clone(streamEvents)
	events[6].ToolCall.ValidationErrors = errs
	var want, got []byte
	a, b := newChunker(testHead, false), newChunker(testHead, false)
	for i := range streamEvents {
		want = a.appendEvent(want, &streamEvents[i])
		got = b.appendEvent(got, &events[i])
	}
	assert.Equal(t, string(want), string(got))
	assert.NotContains(t, string(got), "validation")
}

// TestChunkerEmptyAnswer: an answer with nothing in it still opens with the role chunk.
func TestChunkerEmptyAnswer(t *testing.T) {
	t.Parallel()
	c := newChunker(testHead, false)
	got := string(c.appendEvent(nil, &chat.Event{Kind: chat.EventDone, Finish: chat.FinishStop}))
	assert.Equal(t, 3, strings.Count(got, "data: "))
	assert.Contains(t, got, `"delta":{"role":"assistant","content":""}`)
	assert.True(t, strings.HasSuffix(got, `"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n"))
}

// TestReasoningAnswers: reasoning_content and thinking_blocks in the unary message; in a
// stream, reasoning_content per fragment and the whole block once it ended
// (docs/PROTOCOL.md 11.2). A block with empty text keeps "thinking":"".
func TestReasoningAnswers(t *testing.T) {
	t.Parallel()
	blocks := []chat.ReasoningBlock{{Text: "Pods first.", Signature: "EqQB"}, {Signature: "only"}, {Redacted: true, Data: "ZGF0YQ=="}}
	got := string(appendCompletion(nil, testHead, &chat.Response{Text: "ok", Reasoning: blocks, Finish: chat.FinishStop}))
	assert.Contains(t, got, `"message":{"role":"assistant","content":"ok","refusal":null,"reasoning_content":"Pods first.","thinking_blocks":[{"type":"thinking","thinking":"Pods first.","signature":"EqQB"},{"type":"thinking","thinking":"","signature":"only"},{"type":"redacted_thinking","data":"ZGF0YQ=="}]}`)
	assert.NotContains(t, string(appendCompletion(nil, testHead, &chat.Response{Text: "ok"})), "reasoning")

	c := newChunker(testHead, false)
	var out []byte
	for _, ev := range []chat.Event{
		{Kind: chat.EventReasoning, Text: "Pods "},
		{Kind: chat.EventReasoning, Text: "first."},
		{Kind: chat.EventReasoningBlock, Block: blocks[0]},
		{Kind: chat.EventContent, Text: "ok"},
		{Kind: chat.EventDone, Finish: chat.FinishStop},
	} {
		out = c.appendEvent(out, &ev)
	}
	const h = `data: {"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1767225600,"model":"sonnet","choices":[{"index":0,"delta":`
	want := h + `{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
		h + `{"reasoning_content":"Pods "},"finish_reason":null}]}` + "\n\n" +
		h + `{"reasoning_content":"first."},"finish_reason":null}]}` + "\n\n" +
		h + `{"thinking_blocks":[{"type":"thinking","thinking":"Pods first.","signature":"EqQB"}]},"finish_reason":null}]}` + "\n\n" +
		h + `{"content":"ok"},"finish_reason":null}]}` + "\n\n" +
		h + `{},"finish_reason":"stop"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	assert.Equal(t, want, string(out))
}

// TestErrorBodies: every kind has an OpenAI error type, and a failure's reason and field
// become the error's code and param (docs/PROTOCOL.md 10.5).
func TestErrorBodies(t *testing.T) {
	t.Parallel()
	for k := range fault.Kind(fault.Kinds) {
		assert.NotEmpty(t, errorTypes[k].typ, "kind %d has a type", k)
	}
	refused := fault.Classify(t.Context(), fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue,
		"messages[0].content[1].image_url.url: remote images are not supported"))
	assert.Equal(t, `{"error":{"message":"invalid request: messages[0].content[1].image_url.url: remote images are not supported",`+
		`"type":"invalid_request_error","param":"messages[0].content[1].image_url.url","code":"unsupported_value"}}`,
		string(appendJSON(nil, errorOf(refused))))
	assert.Equal(t, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`,
		string(appendJSON(nil, errorOf(fault.Failure{Kind: fault.KindRateLimited, Message: "slow down"}))))
}
