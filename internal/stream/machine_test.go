package stream_test

import (
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

func TestMachine(t *testing.T) {
	t.Parallel()
	usage := chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	tests := []struct {
		name    string
		events  []bedrock.StreamEvent
		want    []chat.Event
		wantErr string // substring; "" for a complete stream
	}{
		{
			name:   "metadata before messageStop",
			events: []bedrock.StreamEvent{evMessageStart(), evText(0, "hi"), evMetadata(3, 4), evMessageStop("end_turn")},
			want:   []chat.Event{content("hi"), done(chat.FinishStop, "end_turn", usage)},
		},
		{
			name: "events after done are ignored",
			events: []bedrock.StreamEvent{evText(0, "a"), evMessageStop("end_turn"), evMetadata(3, 4),
				evText(0, "late"), evToolStart(1, "t", "n"), evMessageStop("malformed_tool_use")},
			want: []chat.Event{content("a"), done(chat.FinishStop, "end_turn", usage)},
		},
		{
			name: "a tool block never stopped gets {} and its end marker before done",
			events: []bedrock.StreamEvent{evToolStart(4, "t1", "a"), evToolStart(7, "t2", "b"), evToolInput(7, `{"x":1}`),
				evMessageStop("tool_use"), evMetadata(3, 4)},
			want: []chat.Event{
				header(0, "t1", "a"), header(1, "t2", "b"), fragment(1, `{"x":1}`),
				fragment(0, "{}"), toolEnd(0), toolEnd(1),
				done(chat.FinishToolCalls, "tool_use", usage),
			},
		},
		{
			name: "end markers at contentBlockStop, once",
			events: []bedrock.StreamEvent{evToolStart(0, "t1", "a"), evToolInput(0, "{}"), evStop(0), evStop(0),
				evMessageStop("tool_use")},
			want: []chat.Event{
				header(0, "t1", "a"), fragment(0, "{}"), toolEnd(0), done(chat.FinishToolCalls, "tool_use", chat.Usage{}),
			},
		},
		{
			name:   "stop of a block that is not a tool, and of an unknown block, say nothing",
			events: []bedrock.StreamEvent{evText(0, "a"), evStop(0), evStop(9), evMessageStop("end_turn")},
			want:   []chat.Event{content("a"), done(chat.FinishStop, "end_turn", chat.Usage{})},
		},
		{
			name: "metadata without usage",
			events: []bedrock.StreamEvent{evMessageStop("stop_sequence"),
				{Type: bedrock.EventMetadata, Metadata: &bedrock.MetadataEvent{Metrics: &bedrock.Metrics{LatencyMs: 5}}}},
			want: []chat.Event{done(chat.FinishStop, "stop_sequence", chat.Usage{})},
		},
		{
			name:   "unknown stop reason is stop",
			events: []bedrock.StreamEvent{evMessageStop("brand_new_reason"), evMetadata(3, 4)},
			want:   []chat.Event{done(chat.FinishStop, "brand_new_reason", usage)},
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
			want: []chat.Event{done(chat.FinishContentFilter, "content_filtered", chat.Usage{})},
		},
		{
			name:    "malformed model output",
			events:  []bedrock.StreamEvent{evText(0, "x"), evMessageStop("malformed_model_output"), evMetadata(1, 1)},
			want:    []chat.Event{content("x")},
			wantErr: "malformed_model_output",
		},
		{
			name:    "tool input after the block stopped",
			events:  []bedrock.StreamEvent{evToolStart(0, "t", "n"), evStop(0), evToolInput(0, "{}")},
			want:    []chat.Event{header(0, "t", "n"), fragment(0, "{}"), toolEnd(0)},
			wantErr: "after it stopped",
		},
		{
			name:    "block started twice",
			events:  []bedrock.StreamEvent{evToolStart(0, "t", "n"), evToolStart(0, "u", "n")},
			want:    []chat.Event{header(0, "t", "n")},
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
			want:    []chat.Event{content("x")},
			wantErr: stream.ErrTruncated.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := stream.NewMachine(nil)
			got, err := run(t, m, &sliceEvents{evs: tt.events})
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, chat.EventDone, got[len(got)-1].Kind, "the stream completes")
			} else {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorIs(t, err, fault.ErrUpstream)
				for _, ev := range got {
					require.NotEqual(t, chat.EventDone, ev.Kind, "a failed stream never completes")
				}
				// The machine stays failed.
				_, again := m.Feed(evText(0, "more"), nil)
				require.Equal(t, err, again)
				_, again = m.Finish(nil)
				require.Equal(t, err, again)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
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
		m := stream.NewMachine(nil)
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
		m := stream.NewMachine(nil)
		src := &sliceEvents{evs: []bedrock.StreamEvent{evMessageStop("end_turn"), evMetadata(1, 2)}, err: errors.New("never read")}
		out, err := m.Step(src, nil)
		require.NoError(t, err)
		require.Empty(t, out)
		out, err = m.Step(src, nil)
		require.Equal(t, io.EOF, err) // not wrapped
		require.Len(t, out, 1)
		require.Equal(t, chat.EventDone, out[0].Kind)
		out, err = m.Step(src, nil)
		require.Equal(t, io.EOF, err)
		require.Empty(t, out)
		out, err = m.Finish(nil)
		require.NoError(t, err)
		require.Empty(t, out)
	})

	t.Run("done at the end of the stream without metadata", func(t *testing.T) {
		t.Parallel()
		m := stream.NewMachine(nil)
		src := &sliceEvents{evs: []bedrock.StreamEvent{evMessageStop("max_tokens")}}
		_, err := m.Step(src, nil)
		require.NoError(t, err)
		out, err := m.Step(src, nil)
		require.Equal(t, io.EOF, err)
		require.Len(t, out, 1)
		require.Equal(t, chat.FinishLength, out[0].Finish)
		require.Zero(t, out[0].Usage)
	})
}

func TestMachineAccessors(t *testing.T) {
	t.Parallel()
	m := stream.NewMachine(nil)
	require.Empty(t, m.StopReason())
	require.Zero(t, m.Usage())
	var out []chat.Event
	var err error
	for _, ev := range []bedrock.StreamEvent{evToolStart(0, "a", "x"), evToolStart(1, "b", "y"), evMessageStop("tool_use"), evMetadata(5, 6)} {
		out, err = m.Feed(ev, out)
		require.NoError(t, err)
	}
	require.Equal(t, 2, m.ToolCalls())
	require.Equal(t, "tool_use", m.StopReason())
	require.Equal(t, int32(11), m.Usage().TotalTokens)
	require.Equal(t, chat.EventDone, out[len(out)-1].Kind)
}

func TestErrTruncated(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, stream.ErrTruncated, fault.ErrUpstream)
}

// TestMachineFirstCallOnly: when the answer keeps one call, the later calls' events never
// reach the client, and they are counted.
func TestMachineFirstCallOnly(t *testing.T) {
	t.Parallel()
	src := &sliceEvents{evs: []bedrock.StreamEvent{
		evText(0, "Calling."), evToolStart(1, "t1", "a"), evToolInput(1, `{"x":`), evToolStart(2, "t2", "b"),
		evToolInput(2, `{"y":2}`), evToolInput(1, `1}`), evStop(1), evStop(2), evToolStart(3, "t3", "c"),
		evMessageStop("tool_use"), evMetadata(3, 4),
	}}
	m := stream.NewMachine(&translate.Plan{OneCall: true})
	got, err := run(t, m, src)
	require.NoError(t, err)
	want := []chat.Event{
		content("Calling."), header(0, "t1", "a"), fragment(0, `{"x":`), fragment(0, `1}`), toolEnd(0),
		done(chat.FinishToolCalls, "tool_use", chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	require.Equal(t, 1, m.ToolCalls())
	require.Equal(t, 2, m.Dropped())
}

// TestMachineBudgetSpent: with the tool budget spent no call reaches the client, and the
// answer finishes with "stop".
func TestMachineBudgetSpent(t *testing.T) {
	t.Parallel()
	src := &sliceEvents{evs: []bedrock.StreamEvent{
		evText(0, "Calling."), evToolStart(1, "t1", "a"), evToolInput(1, `{}`), evStop(1),
		evMessageStop("tool_use"), evMetadata(3, 4),
	}}
	m := stream.NewMachine(&translate.Plan{BudgetExhausted: true})
	got, err := run(t, m, src)
	require.NoError(t, err)
	want := []chat.Event{content("Calling."), done(chat.FinishStop, "tool_use", chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7})}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	require.Equal(t, 0, m.ToolCalls())
	require.Equal(t, 1, m.Dropped())
}
