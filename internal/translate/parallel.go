package translate

import (
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// oneCall decides whether the answer may hold only one tool call (docs/PROTOCOL.md 13.4):
// the client's parallel_tool_calls when it set it, else off when its history shows it
// answers only some of several calls, so the model sees every result it asked for, or
// when an earlier request of the client showed it (firstResultOnly).
func oneCall(req *chat.Request, firstResultOnly bool, stats *Stats) bool {
	switch {
	case req.ParallelToolCalls != nil:
		return !*req.ParallelToolCalls
	case stats.PartialResults > 0:
		stats.ParallelDisabled = true
	case firstResultOnly:
		stats.ParallelRemembered = true
	default:
		return false
	}
	return true
}

// anthropicToolChoice is Anthropic's tool_choice, which Claude on Bedrock takes through
// additionalModelRequestFields; Converse has no switch of its own for parallel calls
// (docs/BEDROCK.md J).
type anthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// disableParallel is the additionalModelRequestFields that turns parallel tool use off on
// Claude: a tool_choice of the type of the Converse toolChoice (auto when none is sent),
// naming the tool only for "tool". nil on other families, and when the model is offered no
// tools to choose from (the caller sends it only when the request offers tools; here, no
// toolConfig, or tools kept only for the history of a tool_choice "none" request): Bedrock
// refuses the field there, and the answer keeps only its first call either way.
func disableParallel(cfg *bedrock.ToolConfig, choice chat.ToolChoice, model capabilities.Model) *anthropicToolChoice {
	if !strings.HasPrefix(model.Family, "anthropic.") || cfg == nil || choice.Mode == chat.ChoiceNone {
		return nil
	}
	tc := anthropicToolChoice{Type: "auto", DisableParallelToolUse: true}
	if c := cfg.ToolChoice; c != nil {
		switch {
		case c.Any != nil:
			tc.Type = "any"
		case c.Tool != nil:
			tc.Type, tc.Name = "tool", c.Tool.Name
		}
	}
	return &tc
}

// keptCalls is what an answer keeps of its tool calls: none when the tool budget is
// spent, the first when names say so, else all; and how many it dropped.
func keptCalls(calls []chat.ToolCall, names *Plan) ([]chat.ToolCall, int) {
	switch {
	case names != nil && names.BudgetExhausted:
		return nil, len(calls)
	case !names.FirstCallOnly() || len(calls) <= 1:
		return calls, 0
	}
	return calls[:1], len(calls) - 1
}

// budgetNote is the system text of a request whose tool budget is spent.
const budgetNote = "The tool budget for this task is used up. Do not call tools; answer now from the information above."

// toolRounds counts the tool rounds of the task: assistant turns with tool calls after
// the last user message, adjacent assistant messages counted as the one turn they merge
// into, so a client that sends each parallel call as its own message spends one round.
func toolRounds(msgs []chat.Message) int {
	last := -1
	for i := range msgs {
		if msgs[i].Role == chat.RoleUser {
			last = i
		}
	}
	rounds, inTurn := 0, false
	for i := last + 1; i < len(msgs); i++ {
		switch msgs[i].Role {
		case chat.RoleAssistant:
			if len(msgs[i].ToolCalls) > 0 && !inTurn {
				rounds, inTurn = rounds+1, true
			}
		case chat.RoleTool:
			inTurn = false
		}
	}
	return rounds
}

// budgetSpent reports whether the request's tool rounds reach its max_tool_rounds.
func budgetSpent(req *chat.Request) bool {
	return req.MaxToolRounds != nil && int32(toolRounds(req.Messages)) >= *req.MaxToolRounds
}
