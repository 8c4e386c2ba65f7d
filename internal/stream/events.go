package stream

import "github.com/nirmata/llm-gateway/internal/chat"

// toolFunction is the type of every tool call (docs/PROTOCOL.md 3.1).
const toolFunction = "function"

// headerEvent is the first event of a tool call: id, type and name, no arguments.
func headerEvent(index int, id, name string) chat.Event {
	return chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{ID: id, Type: toolFunction, Name: name}}
}

// fragmentEvent carries one piece of a tool call's arguments.
func fragmentEvent(index int, args string) chat.Event {
	return chat.Event{Kind: chat.EventToolCall, Index: index, ToolCall: chat.ToolCall{Arguments: args}}
}

func contentEvent(text string) chat.Event {
	return chat.Event{Kind: chat.EventContent, Text: text}
}

// answerEvent is a fragment of the answer tool's input, passed on as content.
func answerEvent(text string) chat.Event {
	return chat.Event{Kind: chat.EventContent, Text: text, Answer: true}
}

func toolCallEndEvent(index int) chat.Event {
	return chat.Event{Kind: chat.EventToolCallEnd, Index: index}
}

func doneEvent(finish chat.FinishReason, stopReason string, usage chat.Usage) chat.Event {
	return chat.Event{Kind: chat.EventDone, Finish: finish, StopReason: stopReason, Usage: usage}
}
