package bedrocksim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// thinking is what a request's additionalModelRequestFields ask of reasoning, as
// checkReasoning read them (docs/BEDROCK.md G).
type thinking struct {
	// On: the model reasons before it answers.
	On bool
	// Claude: the reasoning is Claude's thinking (type enabled or adaptive): its blocks are
	// signed, and rules G7 to G12 apply.
	Claude bool
	// Type is Claude's thinking.type: enabled, adaptive or disabled; "" when absent.
	Type string
	// Budget is thinking.budget_tokens of type enabled.
	Budget int64
	// Effort is output_config.effort (Claude), maxReasoningEffort (Nova 2), reasoning_effort
	// (gpt-oss) or reasoning_config (DeepSeek); "" when not given.
	Effort string
}

// interleavedBeta lets a Claude 4 thinking budget reach maxTokens (G12).
const interleavedBeta = "interleaved-thinking-2025-05-14"

// thinkingMaxUnaryTokens is the largest maxTokens Converse (not ConverseStream) takes with
// thinking on (G12).
const thinkingMaxUnaryTokens = 21333

// anthropicFields are the members of the Anthropic Messages API that Claude takes through
// additionalModelRequestFields; any other is refused as an extra input (G4: a field of another
// family's form, such as gpt-oss's reasoning_effort).
var anthropicFields = []string{"anthropic_version", "anthropic_beta", "thinking", "output_config",
	"tool_choice", "top_k", "metadata", "stop_sequences", "context_management", "container",
	"mcp_servers", "service_tier"}

// reasoningFields are the reasoning switches of every family (G1 to G4).
var reasoningFields = []string{"thinking", "output_config", "reasoningConfig", "reasoning_effort", "reasoning", "reasoning_config"}

// threeEfforts are the effort levels of Nova 2, gpt-oss and DeepSeek.
var threeEfforts = []string{"low", "medium", "high"}

// checkReasoning applies docs/BEDROCK.md G to the reasoning switches of
// additionalModelRequestFields, in the form of m's family, and records what it read in
// req.thinking. stream is true for ConverseStream. Families without a reasoning form of
// their own (Llama, Mistral, …) have the fields passed through unread, as before.
//
// Texts: G1, G3, G4 (gpt-oss's unknown field), G7 to G10 and G11's temperature texts are
// Bedrock's verbatim, and so is the budget-above-maxTokens text (vercel/ai#7927); where the
// source cuts a text ("…") the simulator stops at the same place. The others are the
// simulator's own, in the style of the service that would answer: Anthropic's validator
// ("<path>: <problem>", relayed after "The model returned the following errors: ") for
// Claude, serde's for gpt-oss, the schema validator's for Nova, and rule A12's "This model
// doesn't support the … field" for a field of another family on Nova and DeepSeek.
func checkReasoning(m ModelInfo, req *converseRequest, stream bool) *apiError {
	var fields []member
	if len(req.AdditionalModelRequestFields) > 0 {
		fields, _ = objectMembers(req.AdditionalModelRequestFields)
	}
	var err *apiError
	switch {
	case isAnthropic(m):
		return checkClaudeThinking(m, req, fields, stream)
	case strings.HasPrefix(m.ID, "amazon.nova"):
		req.thinking, err = readNovaReasoning(m, fields)
	case m.Reasoning == ReasoningEffort:
		req.thinking, err = readGPTOSSReasoning(fields)
	case m.Reasoning == ReasoningDeepSeek:
		req.thinking, err = readDeepSeekReasoning(fields)
	}
	return err
}

// modelError is a ValidationException relaying the model's own 400, as Bedrock words those of
// Anthropic's API (G1 as LibreChat#8346 quotes it, G7, G8, G10).
func modelError(msg string) *apiError {
	return validation("The model returned the following errors: " + msg)
}

// unsupportedField refuses a member of additionalModelRequestFields the model does not take,
// in the words of rule A12.
func unsupportedField(key string) *apiError {
	return validation(fmt.Sprintf("This model doesn't support the additionalModelRequestFields.%s field. Remove additionalModelRequestFields.%s and try again", key, key))
}

// readNovaReasoning reads Nova 2's reasoningConfig {type, maxReasoningEffort} (G4), answering
// as Bedrock's schema validator does.
func readNovaReasoning(m ModelInfo, fields []member) (thinking, *apiError) {
	var th thinking
	for _, f := range fields {
		if !slices.Contains(reasoningFields, f.key) || isNull(f.value) {
			continue
		}
		if f.key != "reasoningConfig" || m.Reasoning != ReasoningNova {
			return th, unsupportedField(f.key)
		}
		const ptr = "#/reasoningConfig"
		members, err := object(ptr, f.value, []string{"type", "maxReasoningEffort"})
		if err != nil {
			return th, err
		}
		typ, ok := lookup(members, "type")
		if !ok {
			return th, malformed(ptr, "required key [type] not found")
		}
		switch s, _ := stringValue(typ); s {
		case "enabled":
			th.On = true
		case "disabled":
		default:
			return th, malformed(ptr+"/type", jsonText(typ)+" is not a valid enum value")
		}
		if effort, ok := lookup(members, "maxReasoningEffort"); ok {
			s, _ := stringValue(effort)
			if !slices.Contains(threeEfforts, s) {
				return th, malformed(ptr+"/maxReasoningEffort", jsonText(effort)+" is not a valid enum value")
			}
			th.Effort = s
		}
	}
	return th, nil
}

// readGPTOSSReasoning reads gpt-oss's flat reasoning_effort (G4). gpt-oss runs behind an
// OpenAI-style server, which refuses another family's field with serde's error.
func readGPTOSSReasoning(fields []member) (thinking, *apiError) {
	var th thinking
	for _, f := range fields {
		if !slices.Contains(reasoningFields, f.key) || isNull(f.value) {
			continue
		}
		if f.key != "reasoning_effort" {
			return th, validation(fmt.Sprintf("Failed to deserialize the JSON body into the target type: %s: unknown field %s, expected one of messages, model, store, reasoning_effort…", f.key, f.key))
		}
		s, _ := stringValue(f.value)
		if !slices.Contains(threeEfforts, s) {
			return th, validation(fmt.Sprintf("Failed to deserialize the JSON body into the target type: reasoning_effort: unknown variant `%s`, expected one of `low`, `medium`, `high`", jsonText(f.value)))
		}
		th.On, th.Effort = true, s
	}
	return th, nil
}

// readDeepSeekReasoning reads DeepSeek's reasoning_config string (G4). reasoning_effort is
// passed unread: langchain-aws#1261 reports Bedrock taking it on DeepSeek v3.
func readDeepSeekReasoning(fields []member) (thinking, *apiError) {
	var th thinking
	for _, f := range fields {
		if !slices.Contains(reasoningFields, f.key) || f.key == "reasoning_effort" || isNull(f.value) {
			continue
		}
		if f.key != "reasoning_config" {
			return th, unsupportedField(f.key)
		}
		s, _ := stringValue(f.value)
		if !slices.Contains(threeEfforts, s) {
			return th, validation("The value at additionalModelRequestFields.reasoning_config must be one of the following: low, medium, high.")
		}
		th.On, th.Effort = true, s
	}
	return th, nil
}

// claudeEfforts are the output_config.effort values of a Claude model (G2, G3); nil for a model
// without adaptive thinking.
func claudeEfforts(m ModelInfo) []string {
	switch {
	case m.Reasoning == ReasoningAdaptiveOnly:
		return []string{"low", "medium", "high", "xhigh", "max"}
	case m.Reasoning == ReasoningAdaptive && m.MaxEffort == "max":
		return []string{"low", "medium", "high", "max"}
	case m.Reasoning == ReasoningAdaptive:
		return threeEfforts
	}
	return nil
}

// checkClaudeThinking applies G1 to G3 and G7 to G12 on a Claude model.
func checkClaudeThinking(m ModelInfo, req *converseRequest, fields []member, stream bool) *apiError {
	opaque := strings.HasPrefix(m.ID, "arn:") // the model behind it is unknown: no extra-input rule
	var th thinking
	var topK, interleaved bool
	for _, f := range fields {
		if !opaque && !slices.Contains(anthropicFields, f.key) {
			return modelError(f.key + ": Extra inputs are not permitted")
		}
		if isNull(f.value) {
			continue
		}
		switch f.key {
		case "thinking":
			if m.Reasoning == "" {
				return modelError("thinking: Extra inputs are not permitted")
			}
			read, err := readClaudeThinking(m, f.value)
			if err != nil {
				return err
			}
			th.Type, th.Budget = read.Type, read.Budget
		case "output_config":
			members, ok := objectMembers(f.value)
			if !ok {
				return modelError("output_config: Input should be a valid dictionary or object to extract fields from")
			}
			effort, ok := lookup(members, "effort")
			if !ok || isNull(effort) {
				continue
			}
			allowed := claudeEfforts(m)
			if allowed == nil {
				return modelError("output_config.effort: Extra inputs are not permitted")
			}
			s, _ := stringValue(effort)
			if !slices.Contains(allowed, s) {
				return modelError("output_config.effort: Input should be " + orList(allowed))
			}
			th.Effort = s
		case "anthropic_beta":
			if elems, ok := arrayElements(f.value); ok {
				for _, e := range elems {
					if s, _ := stringValue(e); s == interleavedBeta {
						interleaved = true
					}
				}
			}
		case "top_k":
			topK = true
		}
	}
	th.On = th.Type == "enabled" || th.Type == "adaptive"
	th.Claude = th.On
	req.thinking = th

	ic := req.InferenceConfig
	if ic == nil {
		ic = &inferenceConfiguration{}
	}
	// G11: Opus 4.7 and later take none of the sampling settings, thinking or not.
	if m.Reasoning == ReasoningAdaptiveOnly {
		switch {
		case ic.Temperature != nil:
			return validation("`temperature` may not be set for this model.")
		case ic.TopP != nil:
			return validation("`top_p` may not be set for this model.")
		case topK:
			return validation("`top_k` may not be set for this model.")
		}
	}
	if !th.On {
		return nil
	}
	// G10
	if forcesTool(req) {
		return modelError("Thinking may not be enabled when tool_choice forces tool use.")
	}
	// G11
	switch {
	case ic.Temperature != nil && *ic.Temperature != 1:
		if m.Reasoning == ReasoningBudget {
			return validation("`temperature` may only be set to 1 when thinking is enabled.")
		}
		return validation("`temperature` may only be set to 1 when thinking is enabled or in adaptive mode.")
	case ic.TopP != nil:
		return validation("`top_p` may not be set when thinking is enabled.")
	case topK:
		return validation("`top_k` may not be set when thinking is enabled.")
	}
	// G1, G12: the budget stays below maxTokens, unless thinking is interleaved. Anthropic
	// requires max_tokens, so a budget without maxTokens is refused too.
	if th.Type == "enabled" && !interleaved && (ic.MaxTokens == nil || th.Budget >= int64(*ic.MaxTokens)) {
		return modelError("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
	}
	msgs := req.Messages
	last := len(msgs) - 1
	// G12: no prefill with thinking (A7 has already refused it on the models that never take it).
	if msgs[last].Role == roleAssistant {
		return modelError("Assistant message prefill is not supported when thinking is enabled. The conversation must end with a user message.")
	}
	// G12: a long answer with thinking needs streaming.
	if !stream && ic.MaxTokens != nil && *ic.MaxTokens > thinkingMaxUnaryTokens {
		return modelError(fmt.Sprintf("maxTokens above %d requires streaming when thinking is enabled. Use ConverseStream, or lower maxTokens.", thinkingMaxUnaryTokens))
	}
	// G7: the turn whose calls the last user turn answers starts with its reasoning.
	if _, results := turnParts(msgs[last]); len(results) > 0 && last > 0 {
		first := msgs[last-1].Content[0]
		if first.ReasoningContent == nil {
			found := "text"
			if first.ToolUse != nil {
				found = "tool_use"
			}
			return modelError(fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.", last-1, found))
		}
	}
	// G8, G9: every reasoning block comes back as the model sent it, to the model and the
	// conversation it was sent in.
	return checkSignatures(m, msgs)
}

// readClaudeThinking reads Claude's thinking object (G1 to G3), answering as Anthropic's
// validator does for a tagged union: the path names the tag ("thinking.enabled.budget_tokens").
func readClaudeThinking(m ModelInfo, raw jsontext.Value) (thinking, *apiError) {
	var th thinking
	members, ok := objectMembers(raw)
	if !ok {
		return th, modelError("thinking: Input should be a valid dictionary or object to extract fields from")
	}
	rawType, ok := lookup(members, "type")
	if !ok || isNull(rawType) {
		return th, modelError("thinking.type: Field required")
	}
	typ, isString := stringValue(rawType)
	if !isString || !slices.Contains([]string{"enabled", "disabled", "adaptive"}, typ) {
		tag := typ
		if !isString {
			tag = jsonText(rawType)
		}
		return th, modelError(fmt.Sprintf("thinking: Input tag '%s' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'", tag))
	}
	th.Type = typ
	path := "thinking." + typ + "."
	for _, mem := range members {
		switch {
		case mem.key == "type":
		case mem.key == "budget_tokens" && typ == "enabled":
			if mem.value.Kind() != '0' || json.Unmarshal(mem.value, &th.Budget) != nil {
				return th, modelError(path + "budget_tokens: Input should be a valid integer")
			}
		default:
			return th, modelError(path + mem.key + ": Extra inputs are not permitted")
		}
	}
	if typ == "enabled" {
		if _, ok := lookup(members, "budget_tokens"); !ok {
			return th, modelError(path + "budget_tokens: Field required")
		}
		if th.Budget < 1024 {
			return th, modelError("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024") // G1
		}
	}
	switch {
	case m.Reasoning == ReasoningAdaptiveOnly && typ != "adaptive": // G3
		return th, validation(fmt.Sprintf(`"thinking.type.%s" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.`, typ))
	case m.Reasoning == ReasoningBudget && typ == "adaptive":
		return th, validation(`"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled" and "thinking.budget_tokens" to control thinking behavior.`)
	}
	return th, nil
}

// forcesTool reports whether the request forces a tool call, through Converse's toolChoice or
// Anthropic's tool_choice (G10).
func forcesTool(req *converseRequest) bool {
	if tc := req.ToolConfig; tc != nil && tc.ToolChoice != nil && (tc.ToolChoice.Any != nil || tc.ToolChoice.Tool != nil) {
		return true
	}
	ch := req.anthropicChoice
	return ch != nil && (ch.Type == ChoiceAny || ch.Type == ChoiceTool)
}

// checkSignatures applies G8 and G9 to every reasoning block of the history.
func checkSignatures(m ModelInfo, msgs []message) *apiError {
	tag := conversationTag(msgs)
	for i, msg := range msgs {
		if msg.Role != roleAssistant {
			continue
		}
		for j, b := range msg.Content {
			rc := b.ReasoningContent
			if rc == nil {
				continue
			}
			at := fmt.Sprintf("messages.%d.content.%d", i, anthropicIndex(msg.Content, j))
			var v verdict
			if rt := rc.ReasoningText; rt != nil {
				if rt.Signature == "" {
					return modelError(at + ".thinking.signature: Field required")
				}
				v = verifyThinking(m.ID, tag, rt.Text, rt.Signature)
			} else {
				v = verifyRedacted(m.ID, tag, rc.RedactedContent)
			}
			switch {
			case v == foreign:
				return validation(at + ": Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"…")
			case v == invalid && rc.ReasoningText != nil:
				return validation(at + ": Invalid `signature` in `thinking` block")
			case v == invalid:
				return validation(at + ": thinking or redacted_thinking blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.")
			}
		}
	}
	return nil
}

// anthropicIndex is the index Anthropic's API gives block j of content: cache points are not
// blocks there but a mark (cache_control) on the block before them.
func anthropicIndex(content []contentBlock, j int) int {
	n := 0
	for _, b := range content[:j] {
		if b.CachePoint == nil {
			n++
		}
	}
	return n
}

// orList renders allowed values as Anthropic's validator lists literals: "'a', 'b' or 'c'".
func orList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "'" + v + "'"
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// stringValue decodes raw as a JSON string; ok is false for any other kind.
func stringValue(raw jsontext.Value) (s string, ok bool) {
	if raw.Kind() != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonText shows a JSON value in an error: a string without its quotes, anything else as written.
func jsonText(raw jsontext.Value) string {
	if s, ok := stringValue(raw); ok {
		return s
	}
	return string(raw)
}
