package bedrocksim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMaxOutput: a maxTokens above the model's maximum output is refused, in Claude's words
// on Claude and Converse's elsewhere; at the maximum it passes, and 3.7 Sonnet takes up to
// 128,000 with the output-128k beta.
func TestMaxOutput(t *testing.T) {
	t.Parallel()
	body := func(maxTokens, extra string) []byte {
		return []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":` + maxTokens + `}` + extra + `}`)
	}
	const beta = `,"additionalModelRequestFields":{"anthropic_beta":["output-128k-2025-02-19"]}`
	for _, tt := range []struct {
		model, maxTokens, extra, want string
	}{
		{"us.anthropic.claude-opus-4-1-20250805-v1:0", "32000", "", ""},
		{"us.anthropic.claude-opus-4-1-20250805-v1:0", "63999", "",
			"ValidationException: The model returned the following errors: max_tokens: 63999 > 32000, which is the maximum allowed number of output tokens for claude-opus-4-1-20250805-v1:0"},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "64000", "", ""},
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", "100000", beta, ""},
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", "100000", "",
			"ValidationException: The model returned the following errors: max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-3-7-sonnet-20250219-v1:0"},
		{"us.amazon.nova-pro-v1:0", "5000", "", ""},
		{"us.amazon.nova-pro-v1:0", "32000", "",
			"ValidationException: The maximum tokens you requested exceeds the model limit of 5000. Try again with a maximum tokens value that is lower than 5000."},
		{"amazon.nova-premier-v1:0", "32000", "", ""},
	} {
		err := ValidateJSON(tt.model, body(tt.maxTokens, tt.extra))
		if tt.want == "" {
			assert.NoError(t, err, "%s %s", tt.model, tt.maxTokens)
		} else if assert.Error(t, err) {
			assert.Equal(t, tt.want, err.Error())
		}
	}
}
