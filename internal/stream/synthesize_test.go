package stream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/translate"
)

func TestSynthesize(t *testing.T) {
	t.Parallel()
	usage := &llmgatewayv1.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}
	resp := &llmgatewayv1.ChatResponse{
		Message: "I'll save both.",
		ToolCalls: []*llmgatewayv1.ToolCall{
			{Id: "tooluse_1", Type: "function", Function: &llmgatewayv1.FunctionCall{Name: "save_policy", Arguments: `{"filename":"a.yaml"}`}},
			{Id: "tooluse_2", Type: "function", Function: &llmgatewayv1.FunctionCall{Name: "list_files"}},
		},
		FinishReason: "tool_calls",
		Usage:        usage,
	}
	got := Synthesize(resp)
	want := []*llmgatewayv1.ChatStreamEvent{
		contentEvent("I'll save both."),
		headerEvent(0, "tooluse_1", "save_policy"), fragmentEvent(0, `{"filename":"a.yaml"}`),
		headerEvent(1, "tooluse_2", "list_files"), fragmentEvent(1, "{}"),
		doneEvent("tool_calls", usage),
	}
	if diff := cmp.Diff(want, got, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Synthesize (-want +got):\n%s", diff)
	}
	require.NotSame(t, usage, got[len(got)-1].GetUsage(), "done must not share resp's usage")

	require.Equal(t, `{"id":"req-9-1","type":"Text","data":"I'll save both."}
{"id":"req-9-2","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"tooluse_1\",\"type\":\"function\",\"function\":{\"name\":\"save_policy\",\"arguments\":\"{\\\"filename\\\":\\\"a.yaml\\\"}\"}}}"}
{"id":"req-9-3","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"tooluse_2\",\"type\":\"function\",\"function\":{\"name\":\"list_files\",\"arguments\":\"{}\"}}}"}
{"id":"req-9-4","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30,\"total_tokens\":150}}"}
`, string(renderChunked("req-9", got)))
}

func TestSynthesizeTextOnly(t *testing.T) {
	t.Parallel()
	got := Synthesize(&llmgatewayv1.ChatResponse{FinishReason: "stop"})
	if diff := cmp.Diff([]*llmgatewayv1.ChatStreamEvent{doneEvent("stop", nil)}, got, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
		t.Error(diff)
	}
}

// TestSynthesizeMatchesStream: a unary answer and the stream of the same answer give the
// client the same text, tool calls and done.
func TestSynthesizeMatchesStream(t *testing.T) {
	t.Parallel()
	text := "Saving."
	unary := &bedrock.ConverseResponse{
		Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: "assistant", Content: []bedrock.ContentBlock{
			{Text: &text},
			{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "t1", Name: "save", Input: []byte(`{"f":"a"}`)}},
			{ToolUse: &bedrock.ToolUseBlock{ToolUseID: "t2", Name: "list"}},
		}}},
		StopReason: "tool_use",
		Usage:      &bedrock.TokenUsage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15},
	}
	resp, err := translate.Response(unary, nil)
	require.NoError(t, err)
	streamed, err := run(t, NewMachine(nil), &sliceEvents{evs: []bedrock.StreamEvent{
		evMessageStart(), evText(0, text), evStop(0),
		evToolStart(1, "t1", "save"), evToolInput(1, `{"f":"a"}`), evStop(1),
		evToolStart(2, "t2", "list"), evStop(2),
		evMessageStop("tool_use"), evMetadata(10, 5),
	}})
	require.NoError(t, err)
	if diff := cmp.Diff(streamed, Synthesize(resp), protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-stream +synthesized):\n%s", diff)
	}
}
