package capabilities

import "strings"

// Reasoning forms: how a model takes extended thinking (docs/BEDROCK.md F.2 and G).
const (
	// ReasoningBudget: Claude's thinking {type: "enabled", budget_tokens}.
	ReasoningBudget = "budget"
	// ReasoningAdaptive: Claude's adaptive thinking with an effort (a budget still taken).
	ReasoningAdaptive = "adaptive"
	// ReasoningAdaptiveOnly: adaptive thinking only; "enabled" is refused.
	ReasoningAdaptiveOnly = "adaptive_only"
	// ReasoningConfig: a reasoningConfig / reasoning_config field (Nova 2, DeepSeek).
	ReasoningConfig = "reasoning_config"
	// ReasoningEffort: a flat reasoning_effort field (gpt-oss).
	ReasoningEffort = "reasoning_effort"
)

// Features is what a model family supports beyond tools (docs/BEDROCK.md F.2). What the
// table marks unverified counts as unsupported, except images and documents, which are
// left to Bedrock.
type Features struct {
	// Reasoning is the model's reasoning form (a Reasoning constant); empty: none.
	Reasoning string
	// MaxEffort is the highest effort of adaptive reasoning ("max" or "high").
	MaxEffort string
	// CacheMinTokens is the fewest tokens before a prompt-cache point; 0: no prompt
	// caching.
	CacheMinTokens int
	// Cache1h: cache points take ttl "1h" besides the default 5 minutes.
	Cache1h bool
	// NoToolCachePoint: a cache point in the tools is refused (Nova).
	NoToolCachePoint bool
	// StructuredOutput: native outputConfig.textFormat and toolSpec.strict.
	StructuredOutput bool
	// Images and Documents: the model takes image and document blocks.
	Images, Documents bool
	// CountTokens: Bedrock's CountTokens counts the model's input (AWS's CountTokens page:
	// Claude 3.5 Haiku, 3.5 Sonnet v2, 3.7 Sonnet, Sonnet 4 and 4.5, Haiku 4.5, Opus 4 to
	// 4.5); for the others the gateway estimates.
	CountTokens bool
}

// featuresOf is the F.2 row of a family (an id without its region prefix).
func featuresOf(family string) Features {
	media := Features{Images: true, Documents: true} // unknown: Bedrock decides
	if tier, major, minor, ok := claudeVersion(family); ok {
		return claudeFeatures(family, tier, major*10+minor)
	}
	switch {
	case strings.HasPrefix(family, "amazon.nova-pro"):
		return Features{CacheMinTokens: 1024, NoToolCachePoint: true, Images: true, Documents: true}
	case strings.HasPrefix(family, "amazon.nova-lite"):
		return Features{CacheMinTokens: 1536, NoToolCachePoint: true, Images: true, Documents: true}
	case strings.HasPrefix(family, "amazon.nova-micro"):
		return Features{CacheMinTokens: 1536, NoToolCachePoint: true}
	case strings.HasPrefix(family, "amazon.nova-2"):
		return Features{Reasoning: ReasoningConfig, Images: true, Documents: true}
	case strings.HasPrefix(family, "openai.gpt-oss"):
		return Features{Reasoning: ReasoningEffort, Images: true, Documents: true}
	case strings.HasPrefix(family, "deepseek.v3"):
		f := Features{Reasoning: ReasoningConfig, Images: true, Documents: true}
		f.StructuredOutput = strings.HasPrefix(family, "deepseek.v3-2") || strings.HasPrefix(family, "deepseek.v3.2")
		return f
	case strings.HasPrefix(family, "meta.llama3-2-11b"), strings.HasPrefix(family, "meta.llama3-2-90b"), strings.HasPrefix(family, "meta.llama4"):
		return media
	case strings.HasPrefix(family, "ai21.jamba"):
		return Features{Documents: true}
	case strings.HasPrefix(family, "meta.llama"), strings.HasPrefix(family, "mistral.mistral-large"), strings.HasPrefix(family, "cohere.command-r"):
		return Features{Documents: true}
	}
	return media
}

// claudeFeatures is the F.2 row of a Claude family of tier and version v (37 for 3.7).
func claudeFeatures(family, tier string, v int) Features {
	f := Features{Images: true, Documents: true}
	switch {
	case v < 35: // Claude 3 Haiku, Sonnet, Opus
	case v == 35 && tier == "haiku":
		f.CacheMinTokens, f.Images, f.CountTokens = 2048, false, true
	case v == 35: // Sonnet 3.5: v2 caches and counts, v1 does neither
		if strings.Contains(family, "20241022") {
			f.CacheMinTokens, f.CountTokens = 1024, true
		}
	case v < 45: // Sonnet 3.7, Sonnet 4, Opus 4 and 4.1
		f.Reasoning, f.CacheMinTokens, f.CountTokens = ReasoningBudget, 1024, true
	case v == 45:
		f.Reasoning, f.CacheMinTokens, f.Cache1h, f.StructuredOutput, f.CountTokens = ReasoningBudget, 4096, true, true, true
		if tier == "sonnet" {
			f.CacheMinTokens = 1024
		}
	case v == 46 && tier == "sonnet":
		f.Reasoning, f.MaxEffort, f.CacheMinTokens, f.Cache1h = ReasoningAdaptive, "high", 2048, true
	case v == 46:
		f.Reasoning, f.MaxEffort, f.CacheMinTokens, f.Cache1h, f.StructuredOutput = ReasoningAdaptive, "max", 4096, true, true
	default: // Opus 4.7 and later: adaptive only; caching and structured output unverified
		f.Reasoning, f.MaxEffort = ReasoningAdaptiveOnly, "max"
	}
	return f
}
