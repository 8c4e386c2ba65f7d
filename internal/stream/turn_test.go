package stream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/stream"
)

// TestRecorderTurn: the assistant message a stream makes is what Converse would have
// returned: blocks in contentBlockIndex order (interleaved calls too), reasoning with its
// signature, a call without input given {}; the events pass through unchanged.
func TestRecorderTurn(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"reasoning_text_tool":        `{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"The user wants a policy.","signature":"c2lnbmF0dXJl"}}},{"text":"Here is the policy."},{"toolUse":{"toolUseId":"tooluse_r2","name":"save_policy","input":{"filename":"r.yaml"}}}]}`,
		"interleaved_parallel_tools": `{"role":"assistant","content":[{"text":"Checking both."},{"toolUse":{"toolUseId":"tooluse_p1","name":"get_pods","input":{"namespace":"default"}}},{"toolUse":{"toolUseId":"tooluse_p2","name":"get_nodes","input":{"label":"role=worker"}}}]}`,
		"no_argument_tool":           `{"role":"assistant","content":[{"text":"Listing."},{"toolUse":{"toolUseId":"tooluse_n1","name":"list_namespaces","input":{}}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			evs := fixtureEvents(t, "testdata/"+name+".bedrock.jsonl")
			rec := stream.NewRecorder(&sliceEvents{evs: evs})
			plain, err := run(t, stream.NewMachine(nil), &sliceEvents{evs: evs})
			require.NoError(t, err)
			recorded, err := run(t, stream.NewMachine(nil), rec)
			require.NoError(t, err)
			assert.Equal(t, plain, recorded, "the events pass through")
			got, err := bedrock.MarshalRequest(&bedrock.ConverseRequest{Messages: []bedrock.Message{rec.Turn()}})
			require.NoError(t, err)
			assert.Equal(t, `{"messages":[`+want+`]}`, string(got))
		})
	}
}

// TestRecorderRedacted: a redacted block is kept as the base64 text Bedrock sent.
func TestRecorderRedacted(t *testing.T) {
	t.Parallel()
	data := "ZW5jcnlwdGVk"
	rec := stream.NewRecorder(&sliceEvents{evs: []bedrock.StreamEvent{
		{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{ContentBlockIndex: 0,
			Delta: bedrock.ContentBlockDelta{ReasoningContent: &bedrock.ReasoningDelta{RedactedContent: &data}}}},
	}})
	_, err := rec.Next()
	require.NoError(t, err)
	turn := rec.Turn()
	require.Len(t, turn.Content, 1)
	assert.Equal(t, data, turn.Content[0].ReasoningContent.RedactedContent)
	assert.Nil(t, turn.Content[0].ReasoningContent.ReasoningText)
}
