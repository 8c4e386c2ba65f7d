package bedrocksim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
)

// anthropicChoice is Anthropic's tool_choice, as Claude takes it through
// additionalModelRequestFields.tool_choice (docs/BEDROCK.md J1): the one switch for parallel
// tool calls that Converse has.
type anthropicChoice struct {
	Type            string // auto, any or tool
	Name            string // with tool only
	DisableParallel bool   // disable_parallel_tool_use
}

// anthropicChoiceTypes are the tool_choice types J1 lists, in the order Anthropic's
// validator names them.
var anthropicChoiceTypes = []string{ChoiceAuto, ChoiceAny, ChoiceTool}

// isAnthropic reports whether m is a Claude model: the id (prefix and ARN already stripped
// by lookupModel) is Anthropic's, or an opaque ARN, which the simulator takes to front
// Claude, as it does for A19.
func isAnthropic(m ModelInfo) bool {
	return strings.HasPrefix(m.ID, "anthropic.") || strings.HasPrefix(m.ID, "arn:")
}

// checkAnthropicToolChoice applies docs/BEDROCK.md J1 to additionalModelRequestFields.tool_choice
// on a Claude model and returns the choice read (nil when none is sent). Other models get the
// fields passed through unread, as Bedrock passes unknown fields to the model.
//
// The texts: "tool_choice.type: Field required" is J1's verbatim. The others follow the form
// of Anthropic's validator as Bedrock relays it ("<path>: <problem>", the path naming the
// tagged-union member as in "tool_choice.tool.name"); the no-tools text is the Anthropic API's;
// the conflict and unknown-tool texts are the simulator's own wording in Bedrock's style, as
// J1 records only that both are 400s.
func checkAnthropicToolChoice(m ModelInfo, req *converseRequest) (*anthropicChoice, *apiError) {
	if !isAnthropic(m) || len(req.AdditionalModelRequestFields) == 0 {
		return nil, nil
	}
	fields, ok := objectMembers(req.AdditionalModelRequestFields)
	if !ok {
		return nil, nil
	}
	raw, ok := lookup(fields, "tool_choice")
	if !ok || isNull(raw) {
		return nil, nil
	}
	members, ok := objectMembers(raw)
	if !ok {
		return nil, validation("tool_choice: Input should be a valid dictionary or object to extract fields from")
	}
	rawType, ok := lookup(members, "type")
	if !ok || isNull(rawType) {
		return nil, validation("tool_choice.type: Field required")
	}
	var ch anthropicChoice
	if rawType.Kind() != '"' || json.Unmarshal(rawType, &ch.Type) != nil || !slices.Contains(anthropicChoiceTypes, ch.Type) {
		tag := string(rawType)
		if rawType.Kind() == '"' {
			tag = ch.Type
		}
		return nil, validation(fmt.Sprintf("tool_choice: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool'", tag))
	}
	path := "tool_choice." + ch.Type + "."
	for _, mem := range members {
		switch {
		case mem.key == "type":
		case mem.key == "name" && ch.Type == ChoiceTool:
			if mem.value.Kind() != '"' || json.Unmarshal(mem.value, &ch.Name) != nil {
				return nil, validation(path + "name: Input should be a valid string")
			}
		case mem.key == "disable_parallel_tool_use":
			switch mem.value.Kind() {
			case 't':
				ch.DisableParallel = true
			case 'f':
			default:
				return nil, validation(path + "disable_parallel_tool_use: Input should be a valid boolean")
			}
		default:
			return nil, validation(path + mem.key + ": Extra inputs are not permitted")
		}
	}
	if _, ok := lookup(members, "name"); ch.Type == ChoiceTool && !ok {
		return nil, validation(path + "name: Field required")
	}

	tc := req.ToolConfig
	var names []string
	if tc != nil {
		for _, t := range tc.Tools {
			if t.ToolSpec != nil {
				names = append(names, t.ToolSpec.Name)
			}
		}
	}
	if len(names) == 0 {
		return nil, validation("tool_choice may only be specified while providing tools.")
	}
	if tc.ToolChoice != nil {
		kind, name := ChoiceAuto, ""
		switch {
		case tc.ToolChoice.Any != nil:
			kind = ChoiceAny
		case tc.ToolChoice.Tool != nil:
			kind, name = ChoiceTool, tc.ToolChoice.Tool.Name
		}
		if kind != ch.Type || name != ch.Name {
			return nil, validation(fmt.Sprintf("The tool_choice in additionalModelRequestFields (%s) conflicts with toolConfig.toolChoice (%s). Remove one of them or make them the same, and try again.",
				describeChoice(ch.Type, ch.Name), describeChoice(kind, name)))
		}
	}
	if ch.Type == ChoiceTool && !slices.Contains(names, ch.Name) {
		return nil, validation(fmt.Sprintf("The tool %s named in additionalModelRequestFields.tool_choice.name is not defined in toolConfig.tools.", ch.Name))
	}
	return &ch, nil
}

// forcedBy returns tc with the forcing of an Anthropic tool_choice of type any or tool added
// when tc forces nothing itself, so the simulated model obeys either field.
func forcedBy(tc *toolConfiguration, ch *anthropicChoice) *toolConfiguration {
	if tc == nil || ch == nil || tc.ToolChoice != nil {
		return tc
	}
	out := *tc
	switch ch.Type {
	case ChoiceAny:
		out.ToolChoice = &toolChoice{Any: &struct{}{}}
	case ChoiceTool:
		out.ToolChoice = &toolChoice{Tool: &specificToolChoice{Name: ch.Name}}
	}
	return &out
}

// describeChoice names a tool choice in the conflict text: its type, and the tool's name.
func describeChoice(kind, name string) string {
	if kind == ChoiceTool {
		return "tool " + name
	}
	return kind
}
