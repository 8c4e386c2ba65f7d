package stream_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// The synthetic answer tool of a json_schema request (docs/PROTOCOL.md 13.3) in a stream:
// its input fragments are content, it takes no ordinal, and the text around it is held and
// kept or dropped as in a unary answer.

const answerName = "json_response"

var usage34 = chat.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}

// answerIDs are the toolUseIds of the answers' calls in TestMachineAnswerTool, by case;
// absent: the tool is not called.
var answerIDs = map[string]string{
	"forced: the preamble is dropped, the input is content, finish stop":    "t1",
	"client calls around it keep dense ordinals; the text goes":             "t2",
	"no input: {} at its stop":                                              "t1",
	"never stopped: {} before done":                                         "t1",
	"text after it is dropped, and a second call":                           "t1",
	"parallel calls off: the answer is no client call":                      "t0",
	"tool budget spent: client calls dropped, the answer kept, finish stop": "t2",
	"reasoning is not held":                                                 "t1",
}

func TestMachineAnswerTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		names translate.Plan
		evs   []bedrock.StreamEvent
		want  []chat.Event
	}{
		{"forced: the preamble is dropped, the input is content, finish stop", translate.Plan{},
			[]bedrock.StreamEvent{evMessageStart(), evText(0, "I'll call "), evText(0, "json_response."), evStop(0),
				evToolStart(1, "t1", answerName), evToolInput(1, `{"city":`), evToolInput(1, `"Paris"}`), evStop(1),
				evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{answer(`{"city":`), answer(`"Paris"}`), done(chat.FinishStop, "tool_use", usage34)}},
		{"client calls around it keep dense ordinals; the text goes", translate.Plan{},
			[]bedrock.StreamEvent{evText(0, "Looking. "), evToolStart(1, "t1", "get_weather"), evToolStart(2, "t2", answerName),
				evToolStart(3, "t3", "get_time"), evToolInput(3, `{"tz":"CET"}`), evToolInput(2, `{"a":1}`), evToolInput(1, `{}`),
				evStop(2), evStop(1), evStop(3), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{header(0, "t1", "get_weather"), header(1, "t3", "get_time"),
				fragment(1, `{"tz":"CET"}`), answer(`{"a":1}`), fragment(0, `{}`), toolEnd(0), toolEnd(1),
				done(chat.FinishToolCalls, "tool_use", usage34)}},
		{"no input: {} at its stop", translate.Plan{},
			[]bedrock.StreamEvent{evToolStart(0, "t1", answerName), evStop(0), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{answer(`{}`), done(chat.FinishStop, "tool_use", usage34)}},
		{"never stopped: {} before done", translate.Plan{},
			[]bedrock.StreamEvent{evToolStart(0, "t1", answerName), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{answer(`{}`), done(chat.FinishStop, "tool_use", usage34)}},
		{"not called: the text comes at the end, whole", translate.Plan{},
			[]bedrock.StreamEvent{evText(0, "Hello"), evText(0, " there."), evMessageStop("end_turn"), evMetadata(3, 4)},
			[]chat.Event{content("Hello there."), done(chat.FinishStop, "end_turn", usage34)}},
		{"not called, with a client call: the text after the call's events", translate.Plan{},
			[]bedrock.StreamEvent{evText(0, "Looking."), evToolStart(1, "t1", "a"), evToolInput(1, `{}`), evStop(1), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{header(0, "t1", "a"), fragment(0, `{}`), toolEnd(0), content("Looking."), done(chat.FinishToolCalls, "tool_use", usage34)}},
		{"text after it is dropped, and a second call", translate.Plan{},
			[]bedrock.StreamEvent{evToolStart(0, "t1", answerName), evToolInput(0, `{"a":1}`), evStop(0), evText(1, "Done."),
				evToolStart(2, "t2", answerName), evToolInput(2, `{"a":2}`), evStop(2), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{answer(`{"a":1}`), done(chat.FinishStop, "tool_use", usage34)}},
		{"parallel calls off: the answer is no client call", translate.Plan{OneCall: true},
			[]bedrock.StreamEvent{evToolStart(0, "t0", answerName), evToolInput(0, `{"a":1}`), evToolStart(1, "t1", "a"), evToolInput(1, `{}`),
				evToolStart(2, "t2", "b"), evToolInput(2, `{}`), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{answer(`{"a":1}`), header(0, "t1", "a"), fragment(0, `{}`), toolEnd(0), done(chat.FinishToolCalls, "tool_use", usage34)}},
		{"tool budget spent: client calls dropped, the answer kept, finish stop", translate.Plan{BudgetExhausted: true},
			[]bedrock.StreamEvent{evText(0, "Calling."), evToolStart(1, "t1", "a"), evToolInput(1, `{}`), evStop(1),
				evToolStart(2, "t2", answerName), evToolInput(2, `{"a":1}`), evStop(2), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{answer(`{"a":1}`), done(chat.FinishStop, "tool_use", usage34)}},
		{"reasoning is not held", translate.Plan{},
			[]bedrock.StreamEvent{evReasoning(0, "Think."), evSignature(0, "sig"), evStop(0), evToolStart(1, "t1", answerName),
				evToolInput(1, `{}`), evMessageStop("tool_use"), evMetadata(3, 4)},
			[]chat.Event{{Kind: chat.EventReasoning, Text: "Think."}, {Kind: chat.EventReasoningBlock, Block: chat.ReasoningBlock{Text: "Think.", Signature: "sig"}},
				answer(`{}`), done(chat.FinishStop, "tool_use", usage34)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			names := tt.names
			names.AnswerTool = answerName
			m := stream.NewMachine(&names)
			got, err := run(t, m, &sliceEvents{evs: tt.evs})
			require.NoError(t, err)
			assert.Equal(t, answerIDs[tt.name], m.AnswerID(), "the toolUseId of the call whose input is the answer")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, e := range got {
				if e.Kind == chat.EventToolCall {
					assert.NotEqual(t, answerName, e.ToolCall.Name, "the answer tool is never a tool call")
				}
			}
			assert.Equal(t, len(m.ToolCallIDs(nil)), m.ToolCalls())
		})
	}
}

// TestMachineAnswerToolErrors: the answer tool's blocks follow Bedrock's protocol like any.
func TestMachineAnswerToolErrors(t *testing.T) {
	t.Parallel()
	names := &translate.Plan{AnswerTool: answerName}
	for name, evs := range map[string][]bedrock.StreamEvent{
		"input after its stop": {evToolStart(0, "t1", answerName), evStop(0), evToolInput(0, `{}`)},
		"started twice":        {evToolStart(0, "t1", answerName), evToolStart(0, "t2", "a")},
	} {
		_, err := run(t, stream.NewMachine(names), &sliceEvents{evs: evs})
		require.ErrorIs(t, err, fault.ErrUpstream, name)
	}
}

// TestAnswerToolStreamMatchesUnary: a streamed answer's content is the unary answer's text
// for the same blocks, with the same tool calls and finish, for every order of text, client
// calls and answer calls; one rule (translate.TextHold) decides both.
func TestAnswerToolStreamMatchesUnary(t *testing.T) {
	t.Parallel()
	// Each answer is a string of blocks: t text, c a client call, a an answer call.
	for _, shape := range []string{"", "t", "a", "ta", "at", "tat", "tc", "ct", "tca", "tac", "atc", "cat", "tctat", "taa", "cc", "tcca"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			var blocks []bedrock.ContentBlock
			var evs []bedrock.StreamEvent
			for i, b := range shape {
				switch b {
				case 't':
					text := "text" + string(rune('0'+i)) + " "
					blocks = append(blocks, bedrock.TextBlock(text))
					evs = append(evs, evText(i, text[:2]), evText(i, text[2:]), evStop(i))
				case 'c', 'a':
					name := "client_tool"
					if b == 'a' {
						name = answerName
					}
					id, input := "t"+string(rune('0'+i)), `{"n":`+string(rune('0'+i))+`}`
					blocks = append(blocks, bedrock.ContentBlock{ToolUse: &bedrock.ToolUseBlock{ToolUseID: id, Name: name, Input: []byte(input)}})
					evs = append(evs, evToolStart(i, id, name), evToolInput(i, input[:3]), evToolInput(i, input[3:]), evStop(i))
				}
			}
			stop := "end_turn"
			if strings.ContainsAny(shape, "ca") {
				stop = "tool_use"
			}
			evs = append(evs, evMessageStop(stop), evMetadata(3, 4))
			names := &translate.Plan{AnswerTool: answerName}

			unary, err := translate.Response(&bedrock.ConverseResponse{StopReason: stop, Usage: &bedrock.TokenUsage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7},
				Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: "assistant", Content: blocks}}}, names)
			require.NoError(t, err)
			m := stream.NewMachine(names)
			events, err := run(t, m, &sliceEvents{evs: evs})
			require.NoError(t, err)
			streamed := stream.Collect(events, m)
			assert.Equal(t, unary.Text, streamed.Text)
			assert.Equal(t, unary.ToolCalls, streamed.ToolCalls)
			assert.Equal(t, unary.Finish, streamed.Finish)
		})
	}
}

func evReasoning(block int, text string) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{
		ContentBlockIndex: block, Delta: bedrock.ContentBlockDelta{ReasoningContent: &bedrock.ReasoningDelta{Text: str(text)}}}}
}

func evSignature(block int, sig string) bedrock.StreamEvent {
	return bedrock.StreamEvent{Type: bedrock.EventContentBlockDelta, ContentBlockDelta: &bedrock.ContentBlockDeltaEvent{
		ContentBlockIndex: block, Delta: bedrock.ContentBlockDelta{ReasoningContent: &bedrock.ReasoningDelta{Signature: str(sig)}}}}
}

// FuzzMachineAnswerTool runs FuzzMachine's programs with tool_3 as the answer tool: no
// panic, errors wrap fault.ErrUpstream, no tool-call event names the answer tool, the
// client's calls keep dense indexes with their header first, and done is last.
func FuzzMachineAnswerTool(f *testing.F) {
	f.Add([]byte{opText, 0, 3, 'a', 'b', 'c', opToolStart, 3, opToolStart, 1, opToolInput, 3, 0x87, opToolInput, 1, 0x83,
		opToolInput, 3, 0xff, opBlockStop, 3, opText, 2, 1, 'x', opMessageStop, 1, opMetadata, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		names := &translate.Plan{AnswerTool: "tool_3", OneCall: len(data)%3 == 1, BudgetExhausted: len(data)%3 == 2}
		out, err := run(t, stream.NewMachine(names), &sliceEvents{evs: decodeProgram(data)})
		if err != nil {
			require.ErrorIs(t, err, fault.ErrUpstream)
		}
		headers := 0
		for i, e := range out {
			switch e.Kind {
			case chat.EventContent:
				require.NotEmpty(t, e.Text)
			case chat.EventToolCall:
				require.NotEqual(t, "tool_3", e.ToolCall.Name)
				if e.ToolCall.ID != "" {
					require.Equal(t, headers, e.Index)
					headers++
				} else {
					require.Less(t, e.Index, headers)
				}
			case chat.EventDone:
				require.Equal(t, len(out)-1, i)
				require.NoError(t, err)
			}
		}
	})
}
