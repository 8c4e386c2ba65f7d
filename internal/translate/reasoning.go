package translate

import (
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// Extended thinking (docs/PROTOCOL.md 11, docs/BEDROCK.md G).

// budgets are the thinking budgets of reasoning_effort on Claude models that take one.
var budgets = map[string]int32{"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384, "xhigh": 32000, "max": 32000}

// minBudget is the smallest budget_tokens Claude takes (BEDROCK.md G1).
const minBudget = 1024

// maxUnaryTokens is the largest maxTokens Bedrock serves with thinking on through Converse;
// above it the gateway calls ConverseStream (BEDROCK.md G12).
const maxUnaryTokens = 21333

// thinking is what a request's extended thinking becomes on its model.
type thinking struct {
	// on: the request sends a reasoning switch to the model.
	on bool
	// claude: the switch is Claude's, so BEDROCK.md G's rules hold: blocks go back in the
	// history, temperature and top_p are not sent, a forced tool choice or a prefill
	// turns it off.
	claude bool
	// budget is the thinking budget of Claude's enabled form; 0 for adaptive thinking.
	budget int32
	// fields are the additionalModelRequestFields that switch it on.
	fields additionalFields
}

// additionalFields is everything the gateway sends in additionalModelRequestFields: the
// reasoning switch of the model's family, Claude's tool_choice, top_k and anthropic_beta
// (docs/BEDROCK.md A21, G, J).
type additionalFields struct {
	Thinking        *anthropicThinking   `json:"thinking,omitzero"`
	OutputConfig    *effortConfig        `json:"output_config,omitzero"`
	ToolChoice      *anthropicToolChoice `json:"tool_choice,omitzero"`
	ReasoningConfig *novaReasoning       `json:"reasoningConfig,omitzero"`
	// ReasoningEffort is gpt-oss's flat field, ReasoningString DeepSeek's.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	ReasoningString string `json:"reasoning_config,omitempty"`
	// TopK is Claude's top_k, NovaInference Nova's inferenceConfig.topK.
	TopK          *int32         `json:"top_k,omitzero"`
	NovaInference *novaInference `json:"inferenceConfig,omitzero"`
	// AnthropicBeta lists the client's anthropic-beta values the model takes.
	AnthropicBeta []string `json:"anthropic_beta,omitzero"`
}

type novaInference struct {
	TopK int32 `json:"topK"`
}

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int32  `json:"budget_tokens,omitzero"`
}

type effortConfig struct {
	Effort string `json:"effort"`
}

type novaReasoning struct {
	Type               string `json:"type"`
	MaxReasoningEffort string `json:"maxReasoningEffort"`
}

// encode is the additionalModelRequestFields value; nil when there is nothing to send.
func (f additionalFields) encode() jsontext.Value {
	if f.Thinking == nil && f.OutputConfig == nil && f.ToolChoice == nil && f.ReasoningConfig == nil &&
		f.ReasoningEffort == "" && f.ReasoningString == "" && f.TopK == nil && f.NovaInference == nil && len(f.AnthropicBeta) == 0 {
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		panic("translate: encoding a declared struct: " + err.Error())
	}
	return b
}

// isEffort reports whether s is a reasoning_effort value.
func isEffort(s string) bool {
	_, ok := budgets[s]
	return ok || s == "none"
}

// planThinking reads the request's reasoning_effort and thinking for the model, or the
// gateway's default effort when the request sets neither: a value outside the contract is
// refused; a switch of the client's the model has no use for is listed as ignored.
func planThinking(req *chat.Request, model capabilities.Model, defaultEffort string, names *Plan) (thinking, error) {
	effort := req.ReasoningEffort
	if effort != "" && !isEffort(effort) {
		return thinking{}, fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "reasoning_effort %s is not one of none, minimal, low, medium, high, xhigh, max", clip.Quote(effort))
	}
	byDefault := effort == "" && req.Thinking == nil && defaultEffort != ""
	if byDefault {
		effort = defaultEffort
	}
	claude := strings.HasPrefix(model.Family, "anthropic.") && isClaudeForm(model.Reasoning)
	if t := req.Thinking; t != nil {
		if err := checkThinking(t); err != nil {
			return thinking{}, err
		}
		switch {
		case t.Type == chat.ThinkingDisabled:
			if effort != "" && effort != "none" {
				names.Ignored = append(names.Ignored, "reasoning_effort")
			}
			return thinking{}, nil
		case !claude:
			names.Ignored = append(names.Ignored, "thinking")
		default:
			th := thinking{on: true, claude: true}
			typ := t.Type
			switch {
			case typ == chat.ThinkingEnabled && model.Reasoning == capabilities.ReasoningAdaptiveOnly:
				// Refused by the adaptive-only models (G3), which clients that do not know
				// the model send: adaptive, without the budget.
				typ = chat.ThinkingAdaptive
				names.Ignored = append(names.Ignored, "thinking.budget_tokens")
			case typ == chat.ThinkingAdaptive && model.Reasoning == capabilities.ReasoningBudget:
				// Refused by the budget-only models: enabled, with the effort's budget
				// (high, Anthropic's default effort, without one).
				typ = chat.ThinkingEnabled
				if effort == "" || effort == "none" {
					effort = "high"
				}
				th.budget = budgets[effort]
			case typ == chat.ThinkingEnabled:
				th.budget = *t.BudgetTokens
			}
			th.fields.Thinking = &anthropicThinking{Type: typ, BudgetTokens: th.budget}
			if typ == chat.ThinkingAdaptive && effort != "" && effort != "none" {
				th.fields.OutputConfig = &effortConfig{Effort: adaptiveEffort(effort, model)}
			}
			return th, nil
		}
	}
	if effort == "" || effort == "none" {
		return thinking{}, nil
	}
	th := thinking{on: true, claude: claude}
	low := effort
	if low == "minimal" {
		low = "low"
	}
	capped := low // the three-level families' effort
	if low == "xhigh" || low == "max" {
		capped = "high"
	}
	switch {
	case model.Reasoning == capabilities.ReasoningBudget:
		th.budget = budgets[effort]
		th.fields.Thinking = &anthropicThinking{Type: chat.ThinkingEnabled, BudgetTokens: th.budget}
	case claude:
		th.fields.Thinking = &anthropicThinking{Type: chat.ThinkingAdaptive}
		th.fields.OutputConfig = &effortConfig{Effort: adaptiveEffort(effort, model)}
	case model.Reasoning == capabilities.ReasoningConfig && strings.HasPrefix(model.Family, "amazon.nova"):
		th.fields.ReasoningConfig = &novaReasoning{Type: "enabled", MaxReasoningEffort: capped}
	case model.Reasoning == capabilities.ReasoningConfig:
		th.fields.ReasoningString = capped
	case model.Reasoning == capabilities.ReasoningEffort:
		th.fields.ReasoningEffort = capped
	default:
		if !byDefault {
			names.Ignored = append(names.Ignored, "reasoning_effort")
		}
		return thinking{}, nil
	}
	return th, nil
}

// AsksThinking reports whether a request asks for extended thinking at all, itself or by
// the default effort, as planThinking reads them: the caller may skip thinking-only work
// (the reasoning cache) when it does not.
func AsksThinking(req *chat.Request, defaultEffort string) bool {
	if t := req.Thinking; t != nil {
		return t.Type != chat.ThinkingDisabled
	}
	effort := req.ReasoningEffort
	if effort == "" {
		effort = defaultEffort
	}
	return effort != "" && effort != "none"
}

// isClaudeForm reports whether a reasoning form is one of Claude's thinking switches.
func isClaudeForm(form string) bool {
	return form == capabilities.ReasoningBudget || form == capabilities.ReasoningAdaptive || form == capabilities.ReasoningAdaptiveOnly
}

// checkThinking refuses a thinking switch outside the contract.
func checkThinking(t *chat.Thinking) error {
	switch t.Type {
	case chat.ThinkingEnabled:
		if t.BudgetTokens == nil {
			return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "thinking.budget_tokens is required when thinking.type is \"enabled\"")
		}
		if n := *t.BudgetTokens; n < minBudget {
			return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "thinking.budget_tokens must be at least %d, got %d", minBudget, n)
		}
	case chat.ThinkingAdaptive, chat.ThinkingDisabled:
	case "":
		return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "thinking.type is missing; it is \"enabled\", \"adaptive\" or \"disabled\"")
	default:
		return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "thinking.type %s is not one of enabled, adaptive, disabled", clip.Quote(t.Type))
	}
	return nil
}

// adaptiveEffort is Claude's output_config.effort for a reasoning_effort: models before
// the adaptive-only ones stop at their MaxEffort, and none of them has xhigh.
func adaptiveEffort(effort string, model capabilities.Model) string {
	switch effort {
	case "minimal":
		return "low"
	case "xhigh", "max":
		if model.Reasoning == capabilities.ReasoningAdaptive {
			return model.MaxEffort
		}
	}
	return effort
}

// settle decides whether thinking stays on for this history (docs/PROTOCOL.md 11.1, 11.4,
// 14.4): a call that fails over to another foundation model than the one that wrote the
// conversation turns any model's thinking off, since the history's blocks are bound to
// the model that wrote them (BEDROCK.md G9); a forced tool choice, a prefill, or a tool
// turn whose signed blocks are missing turns Claude's thinking off, rather than send a
// request Bedrock refuses (BEDROCK.md G7, G10, G12). It returns the outcome ("" when
// thinking stays as asked) and, with thinking off, strips every reasoning block from msgs.
func (th *thinking) settle(req *chat.Request, msgs []bedrock.Message, otherModel bool) string {
	outcome := ""
	switch {
	case th.on && otherModel:
		outcome = chat.ThinkingFailover
	case th.on && th.claude:
		switch {
		case forcesTool(req.ToolChoice):
			outcome = chat.ThinkingForcedToolChoice
		case len(msgs) > 0 && msgs[len(msgs)-1].Role == bedrock.RoleAssistant:
			outcome = chat.ThinkingPrefill
		case missingSignature(msgs):
			outcome = chat.ThinkingMissingSignature
		}
	}
	if outcome != "" {
		*th = thinking{}
	}
	if !th.on || !th.claude {
		stripReasoning(msgs)
	}
	return outcome
}

// forcesTool reports whether a tool choice forces a tool call, which Claude refuses with
// thinking on (BEDROCK.md G10).
func forcesTool(c chat.ToolChoice) bool {
	return c.Mode == chat.ChoiceRequired || c.Mode == chat.ChoiceFunction
}

// missingSignature reports whether the last user turn answers tool calls of an assistant
// turn that does not start with a reasoning block: Bedrock refuses such a request with
// thinking on (BEDROCK.md G7).
func missingSignature(msgs []bedrock.Message) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != bedrock.RoleUser || !hasToolResult(msgs[n-1].Content) {
		return false
	}
	a := msgs[n-2].Content
	return len(a) == 0 || a[0].ReasoningContent == nil
}

func hasToolResult(blocks []bedrock.ContentBlock) bool {
	for _, b := range blocks {
		if b.ToolResult != nil {
			return true
		}
	}
	return false
}

// stripReasoning removes the reasoning blocks of msgs in place.
func stripReasoning(msgs []bedrock.Message) {
	for i := range msgs {
		if msgs[i].Role != bedrock.RoleAssistant {
			continue
		}
		c := msgs[i].Content
		for len(c) > 0 && c[0].ReasoningContent != nil {
			c = c[1:]
		}
		msgs[i].Content = c
	}
}

// applyInference adjusts the inference parameters to thinking on Claude, and sets
// maxTokens (maxTokens): temperature and top_p are not sent with Claude's thinking (G11),
// and never to Claude models of the adaptive-only generation. names lists what was left
// out; the answer goes through ConverseStream when maxTokens is above what Converse serves
// with thinking (G12).
func (th *thinking) applyInference(c *bedrock.InferenceConfig, req *chat.Request, model capabilities.Model, defaultMax int32, names *Plan) *bedrock.InferenceConfig {
	if c != nil && th.noSampling(model) {
		if c.Temperature != nil {
			c.Temperature = nil
			names.Ignored = append(names.Ignored, "temperature")
		}
		if c.TopP != nil {
			c.TopP = nil
			names.Ignored = append(names.Ignored, "top_p")
		}
	}
	if n := maxTokens(req, model, defaultMax, th.budget); n > 0 {
		if c == nil {
			c = &bedrock.InferenceConfig{}
		}
		c.MaxTokens = ptr(n)
		if th.budget >= n {
			// A budget at the model's maximum output or above it: the answer keeps a
			// token, and budget_tokens stays below maxTokens (G12).
			th.budget = n - 1
			th.fields.Thinking.BudgetTokens = th.budget
		}
	}
	if c != nil && th.on && th.claude && c.MaxTokens != nil && *c.MaxTokens > maxUnaryTokens {
		names.StreamOnly = true
	}
	if c != nil && c.MaxTokens == nil && c.Temperature == nil && c.TopP == nil && len(c.StopSequences) == 0 {
		return nil
	}
	return c
}

// noSampling reports whether the model takes no sampling parameters (temperature, top_p,
// top_k) in this request: Claude with thinking on, and the adaptive-only Claude models
// whatever the thinking (G11).
func (th *thinking) noSampling(model capabilities.Model) bool {
	return th.on && th.claude || model.Reasoning == capabilities.ReasoningAdaptiveOnly
}

// reasoningBlocks are the blocks an assistant message carries back (docs/PROTOCOL.md
// 11.3): its own list, else its thinking parts, in order. A thinking block without a
// signature cannot be replayed and is dropped; so is a redacted one without data.
func reasoningBlocks(m *chat.Message, stats *Stats) []bedrock.ContentBlock {
	var out []bedrock.ContentBlock
	add := func(b *chat.ReasoningBlock) {
		switch {
		case !b.Replayable():
			stats.UnsignedReasoning++
		case b.Redacted:
			out = append(out, bedrock.ContentBlock{ReasoningContent: &bedrock.ReasoningContentBlock{RedactedContent: b.Data}})
		default:
			out = append(out, bedrock.ContentBlock{ReasoningContent: &bedrock.ReasoningContentBlock{
				ReasoningText: &bedrock.ReasoningText{Text: b.Text, Signature: b.Signature}}})
		}
	}
	if len(m.Reasoning) > 0 {
		for i := range m.Reasoning {
			add(&m.Reasoning[i])
		}
		return out
	}
	for i := range m.Parts {
		if b := m.Parts[i].Reasoning; b != nil {
			add(b)
		}
	}
	return out
}

// Reasoning is the chat form of an answer's reasoning block.
func Reasoning(b *bedrock.ReasoningContentBlock) (chat.ReasoningBlock, bool) {
	switch {
	case b == nil:
		return chat.ReasoningBlock{}, false
	case b.ReasoningText != nil:
		return chat.ReasoningBlock{Text: b.ReasoningText.Text, Signature: b.ReasoningText.Signature}, true
	case b.RedactedContent != "":
		return chat.ReasoningBlock{Redacted: true, Data: b.RedactedContent}, true
	}
	return chat.ReasoningBlock{}, false
}
