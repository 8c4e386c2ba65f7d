package stream

import (
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/translate"
)

func TestMachine(t *testing.T) {
	t.Parallel()
	usage := &llmgatewayv1.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	tests := []struct {
		name    string
		ends    bool
		events  []bedrock.StreamEvent
		want    []*llmgatewayv1.ChatStreamEvent
		wantErr string // substring; "" for a complete stream
	}{
		{
			name:   "metadata before messageStop",
			events: []bedrock.StreamEvent{evMessageStart(), evText(0, "hi"), evMetadata(3, 4), evMessageStop("end_turn")},
			want:   []*llmgatewayv1.ChatStreamEvent{contentEvent("hi"), doneEvent("stop", usage)},
		},
		{
			name: "events after done are ignored",
			events: []bedrock.StreamEvent{evText(0, "a"), evMessageStop("end_turn"), evMetadata(3, 4),
				evText(0, "late"), evToolStart(1, "t", "n"), evMessageStop("malformed_tool_use")},
			want: []*llmgatewayv1.ChatStreamEvent{contentEvent("a"), doneEvent("stop", usage)},
		},
		{
			name: "a tool block never stopped gets {} and its end marker before done",
			ends: true,
			events: []bedrock.StreamEvent{evToolStart(4, "t1", "a"), evToolStart(7, "t2", "b"), evToolInput(7, `{"x":1}`),
				evMessageStop("tool_use"), evMetadata(3, 4)},
			want: []*llmgatewayv1.ChatStreamEvent{
				headerEvent(0, "t1", "a"), headerEvent(1, "t2", "b"), fragmentEvent(1, `{"x":1}`),
				fragmentEvent(0, "{}"), toolCallEndEvent(0), toolCallEndEvent(1),
				doneEvent("tool_calls", usage),
			},
		},
		{
			name: "end markers at contentBlockStop, once",
			ends: true,
			events: []bedrock.StreamEvent{evToolStart(0, "t1", "a"), evToolInput(0, "{}"), evStop(0), evStop(0),
				evMessageStop("tool_use")},
			want: []*llmgatewayv1.ChatStreamEvent{
				headerEvent(0, "t1", "a"), fragmentEvent(0, "{}"), toolCallEndEvent(0), doneEvent("tool_calls", nil),
			},
		},
		{
			name:   "stop of a block that is not a tool, and of an unknown block, say nothing",
			events: []bedrock.StreamEvent{evText(0, "a"), evStop(0), evStop(9), evMessageStop("end_turn")},
			want:   []*llmgatewayv1.ChatStreamEvent{contentEvent("a"), doneEvent("stop", nil)},
		},
		{
			name: "metadata without usage",
			events: []bedrock.StreamEvent{evMessageStop("stop_sequence"),
				{Type: bedrock.EventMetadata, Metadata: &bedrock.MetadataEvent{Metrics: &bedrock.Metrics{LatencyMs: 5}}}},
			want: []*llmgatewayv1.ChatStreamEvent{doneEvent("stop", nil)},
		},
		{
			name:   "unknown stop reason is stop",
			events: []bedrock.StreamEvent{evMessageStop("brand_new_reason"), evMetadata(3, 4)},
			want:   []*llmgatewayv1.ChatStreamEvent{doneEvent("stop", usage)},
		},
		{
			name: "events with a type but no body, unknown types and other block starts are ignored",
			events: []bedrock.StreamEvent{
				{Type: bedrock.EventContentBlockDelta}, {Type: bedrock.EventContentBlockStart}, {Type: bedrock.EventMessageStop},
				{Type: "citationEvent"},
				{Type: bedrock.EventContentBlockStart, ContentBlockStart: &bedrock.ContentBlockStartEvent{ContentBlockIndex: 0}},
				{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{}},
				evMessageStop("content_filtered"),
			},
			want: []*llmgatewayv1.ChatStreamEvent{doneEvent("content_filter", nil)},
		},
		{
			name:    "malformed model output",
			events:  []bedrock.StreamEvent{evText(0, "x"), evMessageStop("malformed_model_output"), evMetadata(1, 1)},
			want:    []*llmgatewayv1.ChatStreamEvent{contentEvent("x")},
			wantErr: "malformed_model_output",
		},
		{
			name:    "tool input after the block stopped",
			events:  []bedrock.StreamEvent{evToolStart(0, "t", "n"), evStop(0), evToolInput(0, "{}")},
			want:    []*llmgatewayv1.ChatStreamEvent{headerEvent(0, "t", "n"), fragmentEvent(0, "{}")},
			wantErr: "after it stopped",
		},
		{
			name:    "block started twice",
			events:  []bedrock.StreamEvent{evToolStart(0, "t", "n"), evToolStart(0, "u", "n")},
			want:    []*llmgatewayv1.ChatStreamEvent{headerEvent(0, "t", "n")},
			wantErr: "started content block 0 twice",
		},
		{
			name:    "tool call without id",
			events:  []bedrock.StreamEvent{evToolStart(0, "", "n")},
			wantErr: "without a toolUseId",
		},
		{
			name:    "truncated",
			events:  []bedrock.StreamEvent{evMessageStart(), evText(0, "x"), evMetadata(1, 1)},
			want:    []*llmgatewayv1.ChatStreamEvent{contentEvent("x")},
			wantErr: ErrTruncated.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := NewMachine(nil)
			if tt.ends {
				m.EmitToolCallEnds()
			}
			got, err := run(t, m, &sliceEvents{evs: tt.events})
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.True(t, m.Done())
			} else {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorIs(t, err, translate.ErrUpstream)
				require.False(t, m.Done())
				// The machine stays failed.
				_, again := m.Feed(evText(0, "more"), nil)
				require.Equal(t, err, again)
				_, again = m.Finish(nil)
				require.Equal(t, err, again)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStep(t *testing.T) {
	t.Parallel()

	t.Run("passes upstream errors through unchanged and stays failed", func(t *testing.T) {
		t.Parallel()
		apiErr := &bedrock.APIError{Code: bedrock.CodeThrottling, Message: "slow down"}
		m := NewMachine(nil)
		src := &sliceEvents{evs: []bedrock.StreamEvent{evText(0, "a")}, err: apiErr}
		out, err := m.Step(src, nil)
		require.NoError(t, err)
		require.Len(t, out, 1)
		out, err = m.Step(src, out[:0])
		require.Same(t, apiErr, err)
		require.Empty(t, out)
		_, err = m.Step(src, nil)
		require.Same(t, apiErr, err)
		_, err = m.Finish(nil)
		require.Same(t, apiErr, err)
	})

	t.Run("returns io.EOF with done and does not read on", func(t *testing.T) {
		t.Parallel()
		m := NewMachine(nil)
		src := &sliceEvents{evs: []bedrock.StreamEvent{evMessageStop("end_turn"), evMetadata(1, 2)}, err: errors.New("never read")}
		out, err := m.Step(src, nil)
		require.NoError(t, err)
		require.Empty(t, out)
		out, err = m.Step(src, nil)
		require.Equal(t, io.EOF, err) // not wrapped
		require.Len(t, out, 1)
		require.Equal(t, TypeDone, out[0].GetType())
		out, err = m.Step(src, nil)
		require.Equal(t, io.EOF, err)
		require.Empty(t, out)
		out, err = m.Finish(nil)
		require.NoError(t, err)
		require.Empty(t, out)
	})

	t.Run("done at the end of the stream without metadata", func(t *testing.T) {
		t.Parallel()
		m := NewMachine(nil)
		src := &sliceEvents{evs: []bedrock.StreamEvent{evMessageStop("max_tokens")}}
		_, err := m.Step(src, nil)
		require.NoError(t, err)
		out, err := m.Step(src, nil)
		require.Equal(t, io.EOF, err)
		require.Len(t, out, 1)
		require.Equal(t, "length", out[0].GetFinishReason())
		require.Nil(t, out[0].GetUsage())
	})
}

func TestMachineAccessors(t *testing.T) {
	t.Parallel()
	m := NewMachine(nil)
	require.Empty(t, m.StopReason())
	require.Nil(t, m.Usage())
	var out []*llmgatewayv1.ChatStreamEvent
	var err error
	for _, ev := range []bedrock.StreamEvent{evToolStart(0, "a", "x"), evToolStart(1, "b", "y"), evMessageStop("tool_use"), evMetadata(5, 6)} {
		out, err = m.Feed(ev, out)
		require.NoError(t, err)
	}
	require.Equal(t, 2, m.ToolCalls())
	require.Equal(t, "tool_use", m.StopReason())
	require.Equal(t, int32(11), m.Usage().GetTotalTokens())
	require.True(t, m.Done())
}

func TestErrTruncated(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, ErrTruncated, translate.ErrUpstream)
}

func TestErrorEvent(t *testing.T) {
	t.Parallel()
	got := string(renderJSONL([]*llmgatewayv1.ChatStreamEvent{ErrorEvent("resource_exhausted", "slow down")}))
	require.Equal(t, `{"type":"error","error":{"code":"resource_exhausted","message":"slow down"}}`+"\n", got)
}

// TestToolEventProto checks that the single-allocation tool events are ordinary protos.
func TestToolEventProto(t *testing.T) {
	t.Parallel()
	want := &llmgatewayv1.ChatStreamEvent{Type: TypeToolCall, Index: 2, ToolCall: &llmgatewayv1.ToolCall{
		Id: "id", Type: "function", Function: &llmgatewayv1.FunctionCall{Name: "n"}}}
	if diff := cmp.Diff(want, headerEvent(2, "id", "n"), protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
		t.Error(diff)
	}
	want = &llmgatewayv1.ChatStreamEvent{Type: TypeToolCall, Index: 1, ToolCall: &llmgatewayv1.ToolCall{
		Function: &llmgatewayv1.FunctionCall{Arguments: "{}"}}}
	if diff := cmp.Diff(want, fragmentEvent(1, "{}"), protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
		t.Error(diff)
	}
	// They go over gRPC as they are.
	for _, ev := range []*llmgatewayv1.ChatStreamEvent{headerEvent(0, "id", "n"), fragmentEvent(3, `{"a":1}`)} {
		wire, err := proto.Marshal(ev)
		require.NoError(t, err)
		var back llmgatewayv1.ChatStreamEvent
		require.NoError(t, proto.Unmarshal(wire, &back))
		if diff := cmp.Diff(ev, &back, protocmp.Transform()); diff != "" {
			t.Error(diff)
		}
	}
}
