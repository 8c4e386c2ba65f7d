package capabilities

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id                           string
		family                       string
		tools, streaming             bool
		choice                       []string
		noPrefill, noTemperatureTopP bool
	}{
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", "anthropic.claude-sonnet-4-20250514-v1:0", true, true, allChoices, false, false},
		{"anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic.claude-3-5-sonnet-20240620-v1:0", true, true, allChoices, false, false},
		{"anthropic.claude-3-haiku-20240307-v1:0", "anthropic.claude-3-haiku-20240307-v1:0", true, true, allChoices, false, false},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0", true, true, allChoices, false, true},
		{"anthropic.claude-opus-4-1-20250805-v1:0", "anthropic.claude-opus-4-1-20250805-v1:0", true, true, allChoices, false, true},
		{"anthropic.claude-opus-4-20250514-v1:0", "anthropic.claude-opus-4-20250514-v1:0", true, true, allChoices, false, false},
		{"us.anthropic.claude-opus-4-6-v1", "anthropic.claude-opus-4-6-v1", true, true, allChoices, true, true},
		{"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-6", "anthropic.claude-sonnet-4-6", true, true, allChoices, true, true},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0", "amazon.nova-pro-v1:0", true, true, allChoices, false, false},
		{"meta.llama3-1-70b-instruct-v1:0", "meta.llama3-1-70b-instruct-v1:0", true, false, autoOnly, false, false},
		{"us.meta.llama4-maverick-17b-instruct-v1:0", "meta.llama4-maverick-17b-instruct-v1:0", true, false, autoOnly, false, false},
		{"meta.llama3-2-3b-instruct-v1:0", "meta.llama3-2-3b-instruct-v1:0", false, false, nil, false, false},
		{"meta.llama3-8b-instruct-v1:0", "meta.llama3-8b-instruct-v1:0", false, false, nil, false, false},
		{"mistral.mistral-large-2407-v1:0", "mistral.mistral-large-2407-v1:0", true, false, autoAny, false, false},
		{"cohere.command-r-plus-v1:0", "cohere.command-r-plus-v1:0", true, false, autoOnly, false, false},
		{"ai21.jamba-1-5-large-v1:0", "ai21.jamba-1-5-large-v1:0", true, true, autoOnly, false, false},
		{"amazon.titan-text-express-v1", "amazon.titan-text-express-v1", false, false, nil, false, false},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123", "", true, true, allChoices, false, false},
		{"some.future-model-v1", "some.future-model-v1", true, true, allChoices, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			m := Lookup(tt.id)
			assert.Equal(t, tt.id, m.ID)
			assert.Equal(t, tt.family, m.Family)
			assert.Equal(t, tt.tools, m.Tools, "tools")
			assert.Equal(t, tt.streaming, m.StreamingTools, "streaming tools")
			assert.Equal(t, tt.choice, m.ToolChoice, "tool choice")
			assert.Equal(t, tt.noPrefill, m.NoPrefill, "no prefill")
			assert.Equal(t, tt.noTemperatureTopP, m.NoTemperatureWithTopP, "no temperature with top_p")
		})
	}
}

// TestFeatures holds the F.2 rows of docs/BEDROCK.md, one id per row, through every id form.
func TestFeatures(t *testing.T) {
	t.Parallel()
	media := Features{Images: true, Documents: true}
	tests := []struct {
		id   string
		want Features
	}{
		{"anthropic.claude-3-7-sonnet-20250219-v1:0", Features{Reasoning: ReasoningBudget, CacheMinTokens: 1024, Images: true, Documents: true, CountTokens: true}},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", Features{Reasoning: ReasoningBudget, CacheMinTokens: 1024, Images: true, Documents: true, CountTokens: true}},
		{"anthropic.claude-opus-4-1-20250805-v1:0", Features{Reasoning: ReasoningBudget, CacheMinTokens: 1024, Images: true, Documents: true, CountTokens: true}},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", Features{Reasoning: ReasoningBudget, CacheMinTokens: 1024, Cache1h: true, StructuredOutput: true, Images: true, Documents: true, CountTokens: true}},
		{"anthropic.claude-haiku-4-5-20251001-v1:0", Features{Reasoning: ReasoningBudget, CacheMinTokens: 4096, Cache1h: true, StructuredOutput: true, Images: true, Documents: true, CountTokens: true}},
		{"anthropic.claude-opus-4-5-20251101-v1:0", Features{Reasoning: ReasoningBudget, CacheMinTokens: 4096, Cache1h: true, StructuredOutput: true, Images: true, Documents: true, CountTokens: true}},
		{"anthropic.claude-opus-4-6-v1", Features{Reasoning: ReasoningAdaptive, MaxEffort: "max", CacheMinTokens: 4096, Cache1h: true, StructuredOutput: true, Images: true, Documents: true}},
		{"anthropic.claude-sonnet-4-6", Features{Reasoning: ReasoningAdaptive, MaxEffort: "high", CacheMinTokens: 2048, Cache1h: true, Images: true, Documents: true}},
		{"anthropic.claude-opus-4-7", Features{Reasoning: ReasoningAdaptiveOnly, MaxEffort: "max", Images: true, Documents: true}},
		{"anthropic.claude-3-5-sonnet-20241022-v2:0", Features{CacheMinTokens: 1024, Images: true, Documents: true, CountTokens: true}},
		{"anthropic.claude-3-5-sonnet-20240620-v1:0", media},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", Features{CacheMinTokens: 2048, Documents: true, CountTokens: true}},
		{"anthropic.claude-3-haiku-20240307-v1:0", media},
		{"us.amazon.nova-pro-v1:0", Features{CacheMinTokens: 1024, NoToolCachePoint: true, Images: true, Documents: true}},
		{"amazon.nova-lite-v1:0", Features{CacheMinTokens: 1536, NoToolCachePoint: true, Images: true, Documents: true}},
		{"amazon.nova-micro-v1:0", Features{CacheMinTokens: 1536, NoToolCachePoint: true}},
		{"amazon.nova-premier-v1:0", media},
		{"amazon.nova-2-lite-v1:0", Features{Reasoning: ReasoningConfig, Images: true, Documents: true}},
		{"openai.gpt-oss-120b-1:0", Features{Reasoning: ReasoningEffort, Images: true, Documents: true}},
		{"deepseek.v3-v1:0", Features{Reasoning: ReasoningConfig, Images: true, Documents: true}},
		{"us.meta.llama3-2-90b-instruct-v1:0", media},
		{"meta.llama3-1-70b-instruct-v1:0", Features{Documents: true}},
		{"mistral.mistral-large-2407-v1:0", Features{Documents: true}},
		{"ai21.jamba-1-5-large-v1:0", Features{Documents: true}},
		{"acme.unknown-model-v1", media},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0", Features{Reasoning: ReasoningBudget, CacheMinTokens: 1024, Cache1h: true, StructuredOutput: true, Images: true, Documents: true, CountTokens: true}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Lookup(tt.id).Features, tt.id)
	}
}

// TestIsModelID: the ids, profiles and ARNs Bedrock takes pass, new models included;
// other services' model names do not.
func TestIsModelID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{
		"anthropic.claude-sonnet-4-20250514-v1:0",
		"us.anthropic.claude-sonnet-4-20250514-v1:0",
		"us-gov.anthropic.claude-3-haiku-20240307-v1:0",
		"global.anthropic.claude-opus-4-6-v1",
		"ai21.jamba-1-5-large-v1:0",
		"deepseek.r1-v1:0",
		"zai.glm-4.6",
		"acme.model-released-next-week-v1:0",
		"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-6",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
		"arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abcdefghijkl",
		"arn:aws-us-gov:bedrock:us-gov-west-1:123456789012:custom-model/x.y/abcdefghijkl",
		"arn:aws:sagemaker:us-east-1:123456789012:endpoint/my-endpoint",
	} {
		assert.True(t, IsModelID(id), id)
	}
	for _, id := range []string{
		"", "gpt-4o", "gpt-4.1", "gpt-3.5-turbo", "claude-3.5-sonnet", "o3", "sonnet", "not-a-model",
		"llama3.1", "Anthropic.claude-v2", "anthropic.Claude-v2", "anthropic.", ".claude", "anthropic.claude v2",
		"anthropic.claude/v2", "a:b.claude", "arn:aws:s3:::bucket/key", "arn:aws:bedrock:us-east-1:1:", "arn:bedrock",
		"arn:aws:bedrock:us-east-1::foundation-model/anthropic claude",
	} {
		assert.False(t, IsModelID(id), id)
	}
}
