package bedrocksim

import (
	"slices"
	"strings"
)

// The toolChoice kinds of Converse (docs/BEDROCK.md A12). There is no "none".
const (
	ChoiceAuto = "auto"
	ChoiceAny  = "any"
	ChoiceTool = "tool"
)

// Reasoning forms: how a model takes extended thinking in additionalModelRequestFields
// (docs/BEDROCK.md F.2 and G). The empty form is a model without reasoning.
const (
	// ReasoningBudget: Claude's thinking {type: "enabled", budget_tokens: N} (G1).
	ReasoningBudget = "budget"
	// ReasoningAdaptive: Claude's thinking {type: "adaptive"} with output_config.effort; the
	// budget form is still taken (G2).
	ReasoningAdaptive = "adaptive"
	// ReasoningAdaptiveOnly: adaptive thinking only; "enabled" and "disabled" are refused (G3).
	ReasoningAdaptiveOnly = "adaptive_only"
	// ReasoningNova: Nova 2's reasoningConfig {type, maxReasoningEffort} (G4).
	ReasoningNova = "nova_reasoning_config"
	// ReasoningEffort: gpt-oss's flat reasoning_effort string (G4).
	ReasoningEffort = "reasoning_effort"
	// ReasoningDeepSeek: DeepSeek's reasoning_config string (G4).
	ReasoningDeepSeek = "deepseek_reasoning_config"
)

// ModelInfo is what the simulator knows of one foundation model: which of the rules of
// docs/BEDROCK.md sections A, G and H differ by model, as sections F and F.2 record them.
//
// The simulator keeps this table apart from the gateway's own (internal/capabilities) on
// purpose: it is the referee. TestSimulatorModelTable (internal/capabilities) compares the
// two, so a mistake in either shows up as a named disagreement instead of two wrong tables
// agreeing.
type ModelInfo struct {
	// ID is the foundation-model id, as in "anthropic.claude-sonnet-4-20250514-v1:0".
	ID string
	// Tools: a toolConfig is accepted; without it Bedrock answers "This model doesn't
	// support tool use."
	Tools bool
	// StreamingTools: a toolConfig is accepted on ConverseStream too; without it Bedrock
	// answers "This model doesn't support tool use in streaming mode."
	StreamingTools bool
	// ToolChoice lists the toolChoice kinds the model accepts (A12); empty without Tools.
	ToolChoice []string
	// NoPrefill: a conversation ending in an assistant turn is refused (A7).
	NoPrefill bool
	// NoTemperatureWithTopP: temperature and topP together are refused (A20).
	NoTemperatureWithTopP bool
	// ResultsFirst: a text or image block before a toolResult block in one turn is refused
	// (A19). Claude's rule.
	ResultsFirst bool
	// Reasoning is the model's reasoning form (a Reasoning constant); empty: none.
	Reasoning string
	// MaxEffort is the highest output_config.effort of adaptive thinking: "max" (Opus 4.6;
	// adaptive-only models also take "xhigh") or "high" (Sonnet 4.6); empty otherwise.
	MaxEffort string
	// CacheMinTokens is the fewest tokens before a cachePoint for it to count (H6); below it
	// the point is silently ignored. 0: no prompt caching, and every cachePoint is refused.
	CacheMinTokens int
	// Cache1h: cachePoint takes ttl "1h" besides the default "5m" (H5).
	Cache1h bool
	// NoToolCachePoint: a cachePoint in toolConfig.tools is refused (Nova, H8).
	NoToolCachePoint bool
	// StructuredOutput: outputConfig.textFormat and toolSpec.strict are taken (docs/BEDROCK.md
	// F.2, I6, which assumes one list for both); without it either is refused (I7).
	StructuredOutput bool
}

var (
	allChoices = []string{ChoiceAuto, ChoiceAny, ChoiceTool}
	autoOnly   = []string{ChoiceAuto}
	autoAny    = []string{ChoiceAuto, ChoiceAny}
)

// Rule sets shared by several rows.
var (
	// claudeRules: Claude 3, 3.5, 3.7 and 4: every tool feature, tool results before any text (A19).
	claudeRules = ModelInfo{Tools: true, StreamingTools: true, ToolChoice: allChoices, ResultsFirst: true}
	// claude41Rules: Opus 4.1, Sonnet 4.5, Haiku 4.5 and later take temperature or topP, not both (A20).
	claude41Rules = with(claudeRules, func(m *ModelInfo) { m.NoTemperatureWithTopP = true })
	// claude46Rules: Claude 4.6 and later also refuse assistant prefill (A7).
	claude46Rules = with(claude41Rules, func(m *ModelInfo) { m.NoPrefill = true })
	// novaRules: Amazon Nova, every tool feature; text may precede tool results.
	novaRules = ModelInfo{Tools: true, StreamingTools: true, ToolChoice: allChoices}
)

// with returns a copy of m changed by f.
func with(m ModelInfo, f func(*ModelInfo)) ModelInfo {
	f(&m)
	return m
}

// modelRows is docs/BEDROCK.md sections F and F.2 written out per model id: each row is one
// set of rules and the ids it applies to. Ids are Bedrock's own; a row lists every id its
// family covers, so an id missing here is one Bedrock would not resolve.
//
// Rows F does not list, with the choices made for them: Claude Opus 4.7 takes F.2's row, with
// prompt caching and structured output off because F.2 marks them unverified (as
// internal/capabilities does); so is Sonnet 4.6's structured output. gpt-oss
// and DeepSeek v3.1 and v3.2 take tools, streamed too, and all three toolChoice kinds: Bedrock accepts
// forced choices on both (langchain-aws#1278 for gpt-oss, #1261 for DeepSeek, which also
// reports that DeepSeek ignores a forced tool), and the gateway treats a family it does not
// list that way; no prompt caching (F.2).
var modelRows = []struct {
	rules ModelInfo
	ids   []string
}{
	// Claude 3 and 3.5 Sonnet v1: no reasoning, no prompt caching.
	{claudeRules, []string{
		"anthropic.claude-3-haiku-20240307-v1:0",
		"anthropic.claude-3-sonnet-20240229-v1:0",
		"anthropic.claude-3-opus-20240229-v1:0",
		"anthropic.claude-3-5-sonnet-20240620-v1:0",
	}},
	{with(claudeRules, func(m *ModelInfo) { m.CacheMinTokens = 2048 }), []string{
		"anthropic.claude-3-5-haiku-20241022-v1:0",
	}},
	{with(claudeRules, func(m *ModelInfo) { m.CacheMinTokens = 1024 }), []string{
		"anthropic.claude-3-5-sonnet-20241022-v2:0",
	}},
	// Claude 3.7 Sonnet, Sonnet 4, Opus 4: a thinking budget; caching from 1,024 tokens, 5m.
	{with(claudeRules, func(m *ModelInfo) { m.Reasoning, m.CacheMinTokens = ReasoningBudget, 1024 }), []string{
		"anthropic.claude-3-7-sonnet-20250219-v1:0",
		"anthropic.claude-sonnet-4-20250514-v1:0",
		"anthropic.claude-opus-4-20250514-v1:0",
	}},
	{with(claude41Rules, func(m *ModelInfo) { m.Reasoning, m.CacheMinTokens = ReasoningBudget, 1024 }), []string{
		"anthropic.claude-opus-4-1-20250805-v1:0",
	}},
	// Sonnet 4.5, Haiku 4.5 and Opus 4.5, and Opus 4.6 below: structured output and strict
	// tools (I6).
	{with(claude41Rules, func(m *ModelInfo) {
		m.Reasoning, m.CacheMinTokens, m.Cache1h, m.StructuredOutput = ReasoningBudget, 1024, true, true
	}), []string{
		"anthropic.claude-sonnet-4-5-20250929-v1:0",
	}},
	{with(claude41Rules, func(m *ModelInfo) {
		m.Reasoning, m.CacheMinTokens, m.Cache1h, m.StructuredOutput = ReasoningBudget, 4096, true, true
	}), []string{
		"anthropic.claude-haiku-4-5-20251001-v1:0",
		"anthropic.claude-opus-4-5-20251101-v1:0",
	}},
	{with(claude46Rules, func(m *ModelInfo) {
		m.Reasoning, m.MaxEffort, m.CacheMinTokens, m.Cache1h, m.StructuredOutput = ReasoningAdaptive, "max", 4096, true, true
	}), []string{
		"anthropic.claude-opus-4-6-v1",
	}},
	{with(claude46Rules, func(m *ModelInfo) {
		m.Reasoning, m.MaxEffort, m.CacheMinTokens, m.Cache1h = ReasoningAdaptive, "high", 2048, true
	}), []string{
		"anthropic.claude-sonnet-4-6",
	}},
	// Opus 4.7 and the 5.5 generation, Claude Code 2.1's default models (docs/BEDROCK.md L).
	{with(claude46Rules, func(m *ModelInfo) { m.Reasoning, m.MaxEffort = ReasoningAdaptiveOnly, "max" }), []string{
		"anthropic.claude-opus-4-7",
		"anthropic.claude-opus-5-5",
		"anthropic.claude-sonnet-5-5",
		"anthropic.claude-haiku-5-5",
	}},
	// Amazon Nova: caching without points on tools (H8); Premier's caching is unverified.
	{with(novaRules, func(m *ModelInfo) { m.CacheMinTokens, m.NoToolCachePoint = 1536, true }), []string{
		"amazon.nova-micro-v1:0",
		"amazon.nova-lite-v1:0",
	}},
	{with(novaRules, func(m *ModelInfo) { m.CacheMinTokens, m.NoToolCachePoint = 1024, true }), []string{
		"amazon.nova-pro-v1:0",
	}},
	{novaRules, []string{
		"amazon.nova-premier-v1:0",
	}},
	{with(novaRules, func(m *ModelInfo) { m.Reasoning = ReasoningNova }), []string{
		"amazon.nova-2-lite-v1:0",
	}},
	// OpenAI gpt-oss and DeepSeek v3.1 (see above).
	{ModelInfo{Tools: true, StreamingTools: true, ToolChoice: allChoices, Reasoning: ReasoningEffort}, []string{
		"openai.gpt-oss-120b-1:0",
		"openai.gpt-oss-20b-1:0",
	}},
	{ModelInfo{Tools: true, StreamingTools: true, ToolChoice: allChoices, Reasoning: ReasoningDeepSeek}, []string{
		"deepseek.v3-v1:0",
	}},
	// DeepSeek v3.2 as v3.1, with structured output and strict tools (F.2, I6: reported).
	{ModelInfo{Tools: true, StreamingTools: true, ToolChoice: allChoices, Reasoning: ReasoningDeepSeek, StructuredOutput: true}, []string{
		"deepseek.v3-2-v1:0",
	}},
	// AI21 Jamba 1.5: tools, streamed too, auto only.
	{ModelInfo{Tools: true, StreamingTools: true, ToolChoice: autoOnly}, []string{
		"ai21.jamba-1-5-mini-v1:0",
		"ai21.jamba-1-5-large-v1:0",
	}},
	// Llama 3.1, 3.2 11B and 90B, 3.3 and 4, Cohere Command R: tools through Converse only, auto only.
	{ModelInfo{Tools: true, ToolChoice: autoOnly}, []string{
		"meta.llama3-1-8b-instruct-v1:0",
		"meta.llama3-1-70b-instruct-v1:0",
		"meta.llama3-1-405b-instruct-v1:0",
		"meta.llama3-2-11b-instruct-v1:0",
		"meta.llama3-2-90b-instruct-v1:0",
		"meta.llama3-3-70b-instruct-v1:0",
		"meta.llama4-scout-17b-instruct-v1:0",
		"meta.llama4-maverick-17b-instruct-v1:0",
		"cohere.command-r-v1:0",
		"cohere.command-r-plus-v1:0",
	}},
	// Mistral Large: tools through Converse only, auto and any.
	{ModelInfo{Tools: true, ToolChoice: autoAny}, []string{
		"mistral.mistral-large-2402-v1:0",
		"mistral.mistral-large-2407-v1:0",
	}},
	// No tool use: Titan Text, Llama 3.0, Llama 3.2 1B and 3B, Mistral 7B, Mixtral.
	{ModelInfo{}, []string{
		"amazon.titan-text-express-v1",
		"amazon.titan-text-lite-v1",
		"amazon.titan-text-premier-v1:0",
		"meta.llama3-8b-instruct-v1:0",
		"meta.llama3-70b-instruct-v1:0",
		"meta.llama3-2-1b-instruct-v1:0",
		"meta.llama3-2-3b-instruct-v1:0",
		"mistral.mistral-7b-instruct-v0:2",
		"mistral.mixtral-8x7b-instruct-v0:1",
	}},
}

// models indexes modelRows by id.
var models = func() map[string]ModelInfo {
	byID := map[string]ModelInfo{}
	for _, row := range modelRows {
		for _, id := range row.ids {
			m := row.rules
			m.ID = id
			byID[id] = m
		}
	}
	return byID
}()

// Models returns the simulator's model table, one entry per foundation-model id, in the
// order of docs/BEDROCK.md section F. The entries are copies; changing them changes nothing.
func Models() []ModelInfo {
	var out []ModelInfo
	for _, row := range modelRows {
		for _, id := range row.ids {
			m := models[id]
			m.ToolChoice = slices.Clone(m.ToolChoice)
			out = append(out, m)
		}
	}
	return out
}

// regionPrefixes are the geographies of cross-region inference profiles: "us." followed by a
// foundation-model id names the profile that serves that model from US regions.
var regionPrefixes = []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."}

// opaqueModel stands for a model the id does not name: an application inference profile, a
// provisioned or a custom model. Bedrock serves them with the rules of the model behind them,
// which the simulator cannot see, so it refuses only what no model accepts; such profiles
// mostly front Claude, so Claude's A19 applies, and Claude's thinking (both forms, efforts up
// to "max"), prompt caching (from 1,024 tokens, 1h too) and structured output are taken.
var opaqueModel = with(claudeRules, func(m *ModelInfo) {
	m.Reasoning, m.MaxEffort, m.CacheMinTokens, m.Cache1h, m.StructuredOutput = ReasoningAdaptive, "max", 1024, true, true
})

// lookupModel resolves a model id in the forms Bedrock accepts: a foundation-model id, a
// cross-region inference profile (the id behind a region prefix), or the ARN of either.
// Other Bedrock ARNs resolve to opaqueModel. found is false for anything else, which
// Bedrock answers with ResourceNotFoundException.
func lookupModel(id string) (m ModelInfo, found bool) {
	if strings.HasPrefix(id, "arn:") {
		// arn:partition:bedrock:region:account:resource-type/resource-id
		parts := strings.SplitN(id, ":", 6)
		if len(parts) < 6 {
			return ModelInfo{}, false
		}
		kind, rest, ok := strings.Cut(parts[5], "/")
		if !ok || rest == "" {
			return ModelInfo{}, false
		}
		if kind != "foundation-model" && kind != "inference-profile" {
			m = opaqueModel
			m.ID = id
			return m, true
		}
		id = rest
	}
	for _, p := range regionPrefixes {
		if s, ok := strings.CutPrefix(id, p); ok {
			id = s
			break
		}
	}
	m, found = models[id]
	return m, found
}
