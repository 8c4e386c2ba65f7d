package translate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// TestMaxTokens is docs/PROTOCOL.md 14.5: the request's max_tokens, else
// default_max_tokens capped at the model's known maximum output, else none; a thinking
// budget comes on top, with 4096 standing in when there is no allowance.
func TestMaxTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		model      string
		maxTokens  *int32
		defaultMax int32
		effort     string
		want       int32 // 0: none sent
	}{
		{"the default", sonnet4, nil, 4096, "", 4096},
		{"a configured default", sonnet4, nil, 1000, "", 1000},
		{"the request's own", sonnet4, ptr(int32(300)), 4096, "", 300},
		{"0 sends none", sonnet4, nil, 0, "", 0},
		{"0 leaves the request's own", sonnet4, ptr(int32(300)), 0, "", 300},
		{"capped at Llama 3's maximum", llama, nil, 4096, "", 2048},
		{"below the maximum, kept", llama, nil, 1000, "", 1000},
		{"capped at Titan Text Premier's maximum", "amazon.titan-text-premier-v1:0", nil, 4096, "", 3072},
		{"capped at Command R's maximum", "cohere.command-r-plus-v1:0", nil, 4096, "", 4000},
		{"the request's own is capped too", llama, ptr(int32(3000)), 4096, "", 2048},
		{"the request's own on Nova", "amazon.nova-pro-v1:0", ptr(int32(32000)), 4096, "", 5000},
		{"the budget's sum capped at the Claude model's maximum", "anthropic.claude-opus-4-1-20250805-v1:0", ptr(int32(32000)), 4096, "high", 32000},
		{"an unknown maximum: not capped", "meta.llama4-scout-17b-instruct-v1:0", nil, 8192, "", 8192},
		{"the budget on top of the default", sonnet4, nil, 1000, "low", 1024 + 1000},
		{"the budget on top of the request's own", sonnet4, ptr(int32(500)), 4096, "medium", 4096 + 500},
		{"with a budget and no default, 4096 stands in", sonnet4, nil, 0, "high", 16384 + 4096},
		{"an unknown maximum: the request's own as given", "meta.llama4-scout-17b-instruct-v1:0", ptr(int32(math.MaxInt32)), 4096, "", math.MaxInt32},
		{"a budget never wraps an int32, capped", sonnet4, ptr(int32(math.MaxInt32)), 4096, "low", 64000},
		{"adaptive thinking has no budget", opus46, nil, 0, "high", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := chat.Request{MaxTokens: tt.maxTokens, ReasoningEffort: tt.effort, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
			out, _, err := RequestWith(&req, capabilities.Lookup(tt.model), Options{DefaultMaxTokens: tt.defaultMax})
			require.NoError(t, err)
			if tt.want == 0 {
				assert.Nil(t, out.InferenceConfig)
				return
			}
			require.NotNil(t, out.InferenceConfig)
			assert.Equal(t, tt.want, *out.InferenceConfig.MaxTokens)
		})
	}
}

// TestMaxTokensKeepsOtherParameters: the default joins the request's other inference
// parameters.
func TestMaxTokensKeepsOtherParameters(t *testing.T) {
	t.Parallel()
	req := chat.Request{Temperature: ptr(0.5), Stop: []string{"END"}, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
	out, _, err := Request(&req, capabilities.Lookup(sonnet4))
	require.NoError(t, err)
	require.NotNil(t, out.InferenceConfig)
	assert.Equal(t, int32(DefaultMaxTokens), *out.InferenceConfig.MaxTokens)
	assert.Equal(t, 0.5, *out.InferenceConfig.Temperature)
	assert.Equal(t, []string{"END"}, out.InferenceConfig.StopSequences)
}
