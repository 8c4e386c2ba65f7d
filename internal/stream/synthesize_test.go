package stream_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

func TestSynthesize(t *testing.T) {
	t.Parallel()
	usage := chat.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}
	resp := &chat.Response{
		Text: "I'll save both.",
		ToolCalls: []chat.ToolCall{
			{ID: "tooluse_1", Type: "function", Name: "save_policy", Arguments: `{"filename":"a.yaml"}`},
			{ID: "tooluse_2", Type: "function", Name: "list_files"},
		},
		Finish: chat.FinishToolCalls,
		Usage:  usage,
	}
	got := stream.Synthesize(resp)
	want := []chat.Event{
		content("I'll save both."),
		header(0, "tooluse_1", "save_policy"), fragment(0, `{"filename":"a.yaml"}`), toolEnd(0),
		header(1, "tooluse_2", "list_files"), fragment(1, "{}"), toolEnd(1),
		done(chat.FinishToolCalls, "", usage),
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Synthesize (-want +got):\n%s", diff)
	}

	require.Equal(t, `{"id":"req-9-1","type":"Text","data":"I'll save both."}
{"id":"req-9-2","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"tooluse_1\",\"type\":\"function\",\"function\":{\"name\":\"save_policy\",\"arguments\":\"{\\\"filename\\\":\\\"a.yaml\\\"}\"}}}"}
{"id":"req-9-3","type":"ToolStart","data":"{\"tool_call\":{\"id\":\"tooluse_2\",\"type\":\"function\",\"function\":{\"name\":\"list_files\",\"arguments\":\"{}\"}}}"}
{"id":"req-9-4","type":"Done","data":"{\"type\":\"done\",\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30,\"total_tokens\":150}}"}
`, string(renderChunked("req-9", got, nil)))
}

func TestSynthesizeTextOnly(t *testing.T) {
	t.Parallel()
	got := stream.Synthesize(&chat.Response{Finish: chat.FinishStop})
	if diff := cmp.Diff([]chat.Event{done(chat.FinishStop, "", chat.Usage{})}, got); diff != "" {
		t.Error(diff)
	}
}

// TestSynthesizeMatchesStream: a unary answer and the stream of the same answer give the
// client the same events.
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
	streamed, err := run(t, stream.NewMachine(nil), &sliceEvents{evs: []bedrock.StreamEvent{
		evMessageStart(), evText(0, text), evStop(0),
		evToolStart(1, "t1", "save"), evToolInput(1, `{"f":"a"}`), evStop(1),
		evToolStart(2, "t2", "list"), evStop(2),
		evMessageStop("tool_use"), evMetadata(10, 5),
	}})
	require.NoError(t, err)
	if diff := cmp.Diff(streamed, stream.Synthesize(resp), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-stream +synthesized):\n%s", diff)
	}
}

// TestReasoningBlocksAndCollect: reasoning deltas make one block per content block, its
// text whole and its signature; a redacted block is its data; a block Bedrock never
// stopped ends with the stream. Collect makes the unary answer of the events, as the core
// does for a unary request it must serve through ConverseStream.
func TestReasoningBlocksAndCollect(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	delta := func(block int, d bedrock.ReasoningDelta) bedrock.StreamEvent {
		return bedrock.StreamEvent{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{ContentBlockIndex: block, Delta: bedrock.ContentBlockDelta{ReasoningContent: &d}}}
	}
	evs := []bedrock.StreamEvent{
		delta(0, bedrock.ReasoningDelta{Text: str("Pods ")}),
		delta(0, bedrock.ReasoningDelta{Text: str("first.")}),
		delta(0, bedrock.ReasoningDelta{Signature: str("EqQB")}),
		{Type: bedrock.EventContentBlockStop, ContentBlockStop: &bedrock.ContentBlockStopEvent{ContentBlockIndex: 0}},
		delta(1, bedrock.ReasoningDelta{RedactedContent: str("ZGF0YQ==")}),
		{Type: bedrock.EventContentBlockStart, ContentBlockStart: &bedrock.ContentBlockStartEvent{ContentBlockIndex: 2, Start: bedrock.ContentBlockStart{ToolUse: &bedrock.ToolUseBlockStart{ToolUseID: "t1", Name: "get_pods"}}}},
		{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{ContentBlockIndex: 2, Delta: bedrock.ContentBlockDelta{ToolUse: &bedrock.ToolUseDelta{Input: `{"ns":"a"}`}}}},
		{Type: bedrock.EventMessageStop, MessageStop: &bedrock.MessageStopEvent{StopReason: "tool_use"}},
		{Type: bedrock.EventMetadata, Metadata: &bedrock.MetadataEvent{Usage: &bedrock.TokenUsage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}}},
	}
	m := stream.NewMachine(nil)
	out, err := run(t, m, &sliceEvents{evs: evs})
	require.NoError(t, err)
	want := []chat.ReasoningBlock{{Text: "Pods first.", Signature: "EqQB"}, {Redacted: true, Data: "ZGF0YQ=="}}
	assert.Equal(t, want, m.Reasoning())
	assert.Equal(t, []string{"t1"}, m.ToolCallIDs(nil))
	var kinds []chat.EventKind
	for _, e := range out {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []chat.EventKind{chat.EventReasoning, chat.EventReasoning, chat.EventReasoningBlock, chat.EventReasoningBlock,
		chat.EventToolCall, chat.EventToolCall, chat.EventToolCallEnd, chat.EventDone}, kinds)

	resp := stream.Collect(out, m)
	assert.Equal(t, &chat.Response{
		Reasoning: want, StopReason: "tool_use", Finish: chat.FinishToolCalls,
		ToolCalls: []chat.ToolCall{{ID: "t1", Type: "function", Name: "get_pods", Arguments: `{"ns":"a"}`}},
		Usage:     chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
	}, resp)

	// Synthesize replays the blocks: text first, then the block.
	replay := stream.Synthesize(resp)
	assert.Equal(t, chat.Event{Kind: chat.EventReasoning, Text: "Pods first."}, replay[0])
	assert.Equal(t, chat.EventReasoningBlock, replay[1].Kind)
	assert.Equal(t, want[1], replay[2].Block)
}
