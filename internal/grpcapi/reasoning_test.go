package grpcapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// TestReasoningOverGRPC: reasoning_effort, thinking, stream_reasoning and an assistant's
// reasoning_blocks reach the chat model; answers carry reasoning, reasoning_blocks and
// metadata.thinking; stream events carry reasoning only when the request asked
// (docs/PROTOCOL.md 6, 11).
func TestReasoningOverGRPC(t *testing.T) {
	t.Parallel()
	budget := int32(2048)
	got, err := fromProto(&llmgatewayv1.ChatRequest{
		ReasoningEffort: "high", StreamReasoning: true,
		Thinking: &llmgatewayv1.Thinking{Type: "enabled", BudgetTokens: &budget},
		Messages: []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_ASSISTANT, ReasoningBlocks: []*llmgatewayv1.ReasoningBlock{
			{Type: "thinking", Thinking: "a", Signature: "s"}, {Type: "redacted_thinking", Data: "ZA=="},
		}}},
	})
	require.NoError(t, err)
	assert.Equal(t, "high", got.ReasoningEffort)
	assert.True(t, got.StreamReasoning)
	assert.Equal(t, &chat.Thinking{Type: "enabled", BudgetTokens: &budget}, got.Thinking)
	assert.Equal(t, []chat.ReasoningBlock{{Text: "a", Signature: "s"}, {Redacted: true, Data: "ZA=="}}, got.Messages[0].Reasoning)

	blocks := []chat.ReasoningBlock{{Text: "one", Signature: "s1"}, {Text: "two", Signature: "s2"}, {Redacted: true, Data: "ZA=="}}
	resp := responseProto(&chat.Response{Reasoning: blocks, Thinking: chat.ThinkingRestored})
	assert.Equal(t, "one\ntwo", resp.GetReasoning())
	require.Len(t, resp.GetReasoningBlocks(), 3)
	assert.Equal(t, "redacted_thinking", resp.GetReasoningBlocks()[2].GetType())
	assert.Equal(t, "ZA==", resp.GetReasoningBlocks()[2].GetData())
	assert.Equal(t, "s1", resp.GetReasoningBlocks()[0].GetSignature())
	assert.Equal(t, "restored", resp.GetMetadata().GetThinking())

	delta := &chat.Event{Kind: chat.EventReasoning, Text: "one"}
	block := &chat.Event{Kind: chat.EventReasoningBlock, Block: blocks[0]}
	assert.Nil(t, eventProto(delta, false))
	assert.Nil(t, eventProto(block, false))
	assert.Equal(t, "one", eventProto(delta, true).GetReasoning().GetText())
	assert.Equal(t, "s1", eventProto(block, true).GetReasoningBlock().GetSignature())
}
