package bedrocksim

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCountTokensSDK: the AWS SDK's CountTokens gets a count for a Converse input on a
// foundation model that has counting, the same count every time and more for a longer
// input; an inference profile's id and a model without counting are refused with
// Bedrock's text, an unknown model is not found.
func TestCountTokensSDK(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	count := func(model string, msgs ...types.Message) (int32, error) {
		out, err := client.CountTokens(t.Context(), &bedrockruntime.CountTokensInput{
			ModelId: aws.String(model),
			Input: &types.CountTokensInputMemberConverse{Value: types.ConverseTokensRequest{
				Messages: msgs, System: []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}},
				ToolConfig: toolConfig(tool("get_weather", weatherSchema)),
			}},
		})
		if err != nil {
			return 0, err
		}
		return *out.InputTokens, nil
	}
	const sonnet45 = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	short, err := count(sonnet45, userText("hi"))
	require.NoError(t, err)
	assert.Positive(t, short)
	again, err := count(sonnet45, userText("hi"))
	require.NoError(t, err)
	assert.Equal(t, short, again, "deterministic")
	long, err := count(sonnet45, userText("What is the weather in Paris, Berlin, Madrid and Rome this week?"))
	require.NoError(t, err)
	assert.Greater(t, long, short)

	for model, want := range map[string]string{
		"us." + sonnet45:                         "ValidationException: The provided model doesn't support counting tokens.",
		"amazon.nova-pro-v1:0":                   "ValidationException: The provided model doesn't support counting tokens.",
		"anthropic.claude-sonnet-9-v1:0":         "ResourceNotFoundException: Could not resolve the foundation model from the provided model identifier.",
		"anthropic.claude-opus-4-7":              "ValidationException: The provided model doesn't support counting tokens.",
		"anthropic.claude-3-haiku-20240307-v1:0": "ValidationException: The provided model doesn't support counting tokens.",
	} {
		_, err := count(model, userText("hi"))
		var apiErr smithy.APIError
		require.True(t, errors.As(err, &apiErr), model)
		assert.Equal(t, want, apiErr.ErrorCode()+": "+apiErr.ErrorMessage(), model)
	}
}
