package stream

import llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"

// Event types of the gateway's stream (docs/PROTOCOL.md 3.2), and one internal type.
const (
	TypeContent  = "content"
	TypeToolCall = "tool_call"
	TypeDone     = "done"
	TypeError    = "error"

	// TypeToolCallEnd marks that the tool call at Index has its complete arguments. Only a
	// Machine told EmitToolCallEnds produces it, for the Chunker; it is not part of the
	// JSONL or gRPC contract and must not be sent to those clients.
	TypeToolCallEnd = "tool_call_end"
)

// toolFunction is the type of every tool call (docs/PROTOCOL.md 3.1).
const toolFunction = "function"

// ErrorEvent returns the last event of a failed stream: code is the snake-case gRPC code
// name of the failure ("resource_exhausted", "unavailable"), message what a person can act on.
func ErrorEvent(code, message string) *llmgatewayv1.ChatStreamEvent {
	return &llmgatewayv1.ChatStreamEvent{
		Type:  TypeError,
		Error: &llmgatewayv1.StreamError{Code: code, Message: message},
	}
}

// toolEvent lays out a tool_call event with its ToolCall and FunctionCall, so that one
// allocation makes all three.
type toolEvent struct {
	ev llmgatewayv1.ChatStreamEvent
	tc llmgatewayv1.ToolCall
	fn llmgatewayv1.FunctionCall
}

func newToolEvent(index int32) *toolEvent {
	te := new(toolEvent)
	te.ev.Type = TypeToolCall
	te.ev.Index = index
	te.ev.ToolCall = &te.tc
	te.tc.Function = &te.fn
	return te
}

// headerEvent is the first event of a tool call: id, type and name, no arguments.
func headerEvent(index int32, id, name string) *llmgatewayv1.ChatStreamEvent {
	te := newToolEvent(index)
	te.tc.Id = id
	te.tc.Type = toolFunction
	te.fn.Name = name
	return &te.ev
}

// fragmentEvent carries one piece of a tool call's arguments.
func fragmentEvent(index int32, args string) *llmgatewayv1.ChatStreamEvent {
	te := newToolEvent(index)
	te.fn.Arguments = args
	return &te.ev
}

func contentEvent(text string) *llmgatewayv1.ChatStreamEvent {
	return &llmgatewayv1.ChatStreamEvent{Type: TypeContent, Delta: text}
}

func toolCallEndEvent(index int32) *llmgatewayv1.ChatStreamEvent {
	return &llmgatewayv1.ChatStreamEvent{Type: TypeToolCallEnd, Index: index}
}

func doneEvent(finish string, usage *llmgatewayv1.Usage) *llmgatewayv1.ChatStreamEvent {
	return &llmgatewayv1.ChatStreamEvent{Type: TypeDone, FinishReason: finish, Usage: usage}
}
