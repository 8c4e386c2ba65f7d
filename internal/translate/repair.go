package translate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// NativeStrict reports whether the model takes toolSpec.strict, so Bedrock itself holds a
// strict tool's input to its schema (docs/BEDROCK.md I6: the same models as structured
// output).
func NativeStrict(model capabilities.Model) bool { return model.StructuredOutput }

// StrictRepair reports whether the calls of tool t are validated in repair mode whatever
// tool_validation says: a strict tool on a model without native strict tool use
// (docs/PROTOCOL.md 13.1).
func StrictRepair(t *chat.Tool, model capabilities.Model) bool {
	return t.Strict && !NativeStrict(model)
}

// Texts of the error results a repair turn gives the model (docs/PROTOCOL.md 13.2).
const (
	repairInvalid = "Invalid arguments for %s: %s. Call %s again with corrected arguments."
	repairNotRun  = "Not run: other calls in this turn had invalid arguments. Repeat this call if it is still needed."
)

// RepairRequest is the Converse request of a repair attempt (docs/PROTOCOL.md 13.2): the
// original request, then the model's own turn as Bedrock returned it (reasoning blocks
// first, the Bedrock tool names and toolUseIds), then a user turn with one error
// toolResult per toolUse block of that turn, in its order. violations holds, by Bedrock
// toolUseId, the violations of the calls that broke their schema: each is told what is
// wrong with its arguments; any other toolUse block (a valid or unchecked call, one
// dropped from the answer, a tool of the gateway's own) is told it was not run. The model
// sees its tools under their Bedrock names, so the texts use those.
//
// Only the latest attempt's turn follows the original request, never every earlier one:
// the model corrects its last try, and the request does not grow with each attempt.
// orig is not modified: the result shares its tools, system and inference settings, and
// its messages up to the new turns. Blank text blocks of the turn are left out, since
// Bedrock refuses them in a request (docs/BEDROCK.md A4); a request that ended with an
// assistant turn (prefill) has the model's turn appended to it, since roles alternate.
func RepairRequest(orig *bedrock.ConverseRequest, turn bedrock.Message, violations map[string][]string) *bedrock.ConverseRequest {
	assistant := bedrock.Message{Role: bedrock.RoleAssistant, Content: make([]bedrock.ContentBlock, 0, len(turn.Content))}
	results := bedrock.Message{Role: bedrock.RoleUser}
	for _, b := range turn.Content {
		switch {
		case b.Text != nil && isBlank(*b.Text):
			continue
		case b.ToolUse != nil:
			errs := violations[b.ToolUse.ToolUseID]
			text := repairNotRun
			if len(errs) > 0 {
				text = repairText(b.ToolUse.Name, errs)
			}
			results.Content = append(results.Content, bedrock.ContentBlock{ToolResult: &bedrock.ToolResultBlock{
				ToolUseID: b.ToolUse.ToolUseID,
				Content:   []bedrock.ToolResultContentBlock{{Text: &text}},
				Status:    bedrock.StatusError,
			}})
		}
		assistant.Content = append(assistant.Content, b)
	}
	out := *orig
	msgs := slices.Clip(orig.Messages)
	if n := len(msgs); n > 0 && msgs[n-1].Role == bedrock.RoleAssistant {
		prefill := msgs[n-1]
		assistant.Content = slices.Concat(prefill.Content, assistant.Content)
		msgs = msgs[:n-1]
	}
	out.Messages = append(msgs, assistant, results)
	return &out
}

// repairText tells the model what is wrong with one call's arguments.
func repairText(name string, violations []string) string {
	return fmt.Sprintf(repairInvalid, name, strings.Join(violations, "; "), name)
}
