package translate

import (
	"bytes"
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// Response translates a Converse answer (docs/BEDROCK.md D). It fills Text, Reasoning
// (every block, in Bedrock's order, one with empty text included), ToolCalls, Finish,
// Usage and StopReason; the caller fills Model, LatencyMs and RequestID. Tool names and ids go back through names (nil: unchanged);
// the synthetic answer tool's input is the text (see TextHold), never a tool call. A
// 200 without output, a malformed_* stop reason, or a tool input that is not a JSON object
// is an error wrapping fault.ErrUpstream.
func Response(resp *bedrock.ConverseResponse, names *Plan) (*chat.Response, error) {
	if resp == nil || resp.Output == nil || resp.Output.Message == nil {
		return nil, upstreamf("Bedrock answered 200 without output; retry the request")
	}
	finish, err := FinishReason(resp.StopReason)
	if err != nil {
		return nil, err
	}
	out := &chat.Response{Finish: finish, Usage: Usage(resp.Usage), StopReason: resp.StopReason}
	if resp.ServiceTier != nil {
		out.ServiceTier = resp.ServiceTier.Type
	}
	var text strings.Builder
	hold := NewTextHold(names)
	for _, b := range resp.Output.Message.Content {
		switch {
		case b.Text != nil:
			text.WriteString(hold.Text(*b.Text))
		case b.ToolUse != nil && names.IsAnswerTool(b.ToolUse.Name):
			if hold.AnswerCall() {
				args, err := Arguments(b.ToolUse.Input)
				if err != nil {
					return nil, err
				}
				text.WriteString(args)
				out.AnswerID = b.ToolUse.ToolUseID
			}
		case b.ToolUse != nil:
			args, err := Arguments(b.ToolUse.Input)
			if err != nil {
				return nil, err
			}
			out.ToolCalls = append(out.ToolCalls, chat.ToolCall{
				ID:        names.ToolCallID(b.ToolUse.ToolUseID),
				Type:      "function",
				Name:      names.ToolName(b.ToolUse.Name),
				Arguments: args,
			})
		case b.ReasoningContent != nil:
			if r, ok := Reasoning(b.ReasoningContent); ok {
				out.Reasoning = append(out.Reasoning, r)
			}
		}
	}
	text.WriteString(hold.End())
	out.Text = text.String()
	out.ToolCalls, out.DroppedToolCalls = keptCalls(out.ToolCalls, names)
	if names != nil && names.BudgetExhausted {
		out.BudgetExhausted = true
	}
	if out.Finish == chat.FinishToolCalls && len(out.ToolCalls) == 0 && (out.BudgetExhausted || hold.Answered()) {
		out.Finish = chat.FinishStop // a call made anyway is dropped; the answer tool's call is the answer
	}
	return out, nil
}

// Arguments turns a toolUse input into the arguments text: the input's own bytes compacted
// (never decoded and re-encoded, so numbers and UTF-8 survive exactly), "{}" when absent.
func Arguments(input []byte) (string, error) {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return "{}", nil
	}
	b, err := compactJSON(bytes.Clone(trimmed))
	if err != nil {
		return "", upstreamf("Bedrock sent a tool call whose input %s", fault.JSONErrorText(err))
	}
	if b[0] != '{' {
		return "", upstreamf("Bedrock sent a tool call whose input is %s, not a JSON object", jsonKind(b[0]))
	}
	return string(b), nil
}

// Usage maps Bedrock's token counts. Cached prompt tokens (read and written) are prompt
// tokens to the client; total is Bedrock's own total, or prompt+completion when Bedrock sent
// none. A nil usage gives zeros.
func Usage(u *bedrock.TokenUsage) chat.Usage {
	if u == nil {
		return chat.Usage{}
	}
	out := chat.Usage{
		PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
		CompletionTokens: u.OutputTokens,
		TotalTokens:      u.TotalTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheWriteInputTokens,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}
