package bedrocksim

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLookupModel(t *testing.T) {
	t.Parallel()
	const sonnet = "anthropic.claude-sonnet-4-20250514-v1:0"
	for _, tc := range []struct {
		id, want string // want: the foundation model resolved, "" for not found
	}{
		{sonnet, sonnet},
		{"us." + sonnet, sonnet},
		{"eu." + sonnet, sonnet},
		{"apac." + sonnet, sonnet},
		{"global." + sonnet, sonnet},
		{"us-gov." + sonnet, sonnet},
		{"jp." + sonnet, sonnet},
		{"au." + sonnet, sonnet},
		{"ca." + sonnet, sonnet},
		{"arn:aws:bedrock:us-east-1::foundation-model/" + sonnet, sonnet},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us." + sonnet, sonnet},
		{"arn:aws-us-gov:bedrock:us-gov-west-1:123456789012:inference-profile/us-gov." + sonnet, sonnet},
		{"arn:aws:bedrock:us-east-1::foundation-model/meta.llama3-1-70b-instruct-v1:0", "meta.llama3-1-70b-instruct-v1:0"},

		{"", ""},
		{"acme.gpt-9", ""},
		{"anthropic.claude-sonnet-9-20300101-v1:0", ""}, // a known family, an unknown id
		{"anthropic.claude", ""},
		{"meta.llama3-1-70b", ""},
		{"xx." + sonnet, ""},
		{"us.us." + sonnet, ""},
		{"arn:aws:bedrock:us-east-1::foundation-model/acme.gpt-9", ""},
		{"arn:aws:bedrock:us-east-1::foundation-model/", ""},
		{"arn:aws:bedrock:us-east-1", ""},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile", ""},
	} {
		m, found := lookupModel(tc.id)
		assert.Equal(t, tc.want != "", found, tc.id)
		assert.Equal(t, tc.want, m.ID, tc.id)
	}

	// Opaque ARNs hide the model: the simulator refuses only what no model accepts.
	for _, id := range []string{
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6",
		"arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abcdef",
		"arn:aws:bedrock:us-east-1:123456789012:custom-model/amazon.nova-pro-v1:0/abc",
	} {
		m, found := lookupModel(id)
		require.True(t, found, id)
		assert.Equal(t, ModelInfo{ID: id, Tools: true, StreamingTools: true, ToolChoice: allChoices, ResultsFirst: true,
			Reasoning: ReasoningAdaptive, MaxEffort: "max", CacheMinTokens: 1024, Cache1h: true, StructuredOutput: true}, m, id)
	}
}

// TestModels checks the table's own consistency; internal/capabilities'
// TestSimulatorModelTable compares it with the gateway's.
func TestModels(t *testing.T) {
	t.Parallel()
	ms := Models()
	require.Len(t, ms, len(models), "an id listed twice")
	for _, m := range ms {
		found, ok := lookupModel(m.ID)
		require.True(t, ok, m.ID)
		assert.Equal(t, m, found)
		if m.Tools {
			assert.Contains(t, m.ToolChoice, ChoiceAuto, "%s: auto comes with tool use", m.ID)
		} else {
			assert.Empty(t, m.ToolChoice, m.ID)
			assert.False(t, m.StreamingTools, m.ID)
		}
		switch m.Reasoning {
		case ReasoningAdaptive, ReasoningAdaptiveOnly:
			assert.Contains(t, []string{"high", "max"}, m.MaxEffort, "%s: adaptive thinking has a highest effort", m.ID)
		case "", ReasoningBudget, ReasoningNova, ReasoningEffort, ReasoningDeepSeek:
			assert.Empty(t, m.MaxEffort, m.ID)
		default:
			t.Errorf("%s: unknown reasoning form %q", m.ID, m.Reasoning)
		}
		if m.Reasoning != "" && m.Reasoning != ReasoningNova && m.Reasoning != ReasoningEffort && m.Reasoning != ReasoningDeepSeek {
			assert.True(t, isAnthropic(m), "%s: Claude's thinking on a model that is not Claude", m.ID)
		}
		if m.CacheMinTokens == 0 {
			assert.False(t, m.Cache1h, "%s: a 1h TTL without prompt caching", m.ID)
			assert.False(t, m.NoToolCachePoint, "%s: a tools rule without prompt caching", m.ID)
		}
		if m.StructuredOutput {
			assert.True(t, m.Tools, "%s: strict tools without tool use", m.ID)
		}
		for _, p := range regionPrefixes {
			_, ok := lookupModel(p + m.ID)
			assert.True(t, ok, p+m.ID)
		}
	}
	ms[0].ToolChoice[0] = "changed"
	assert.Equal(t, ChoiceAuto, Models()[0].ToolChoice[0], "Models returns copies")
}

func TestValidateJSONUnknownModel(t *testing.T) {
	t.Parallel()
	err := ValidateJSON("anthropic.claude-sonnet-9-20300101-v1:0", []byte(req(hi)))
	var apiErr *apiError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, &apiError{Code: codeResourceNotFound, Status: http.StatusNotFound,
		Message: "Could not resolve the foundation model from the provided model identifier."}, apiErr)
}
