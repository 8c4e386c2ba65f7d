package bedrock

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCountTokensAsTheSDK: CountTokens sends what the AWS SDK sends for the same input (the
// path with the model label escaped, the JSON body, a signature AWS verifies) and reads
// the count.
func TestCountTokensAsTheSDK(t *testing.T) {
	t.Parallel()
	type seen struct {
		path string
		body map[string]any
	}
	var mu sync.Mutex
	var got []seen
	var sigErr error
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		got = append(got, seen{r.URL.EscapedPath(), body})
		if len(got) == 1 { // the client's; the SDK's differs in its optional headers
			sigErr = verifySigV4(r, b, aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, "us-west-2")
		}
		mu.Unlock()
		_, _ = io.WriteString(w, `{"inputTokens":1234}`)
	})
	c := newTestClient(t, h, 1)
	const model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	req := &ConverseRequest{
		Messages:                     []Message{{Role: RoleUser, Content: []ContentBlock{TextBlock("hi <&>")}}},
		System:                       []SystemBlock{{Text: "Be brief."}},
		ToolConfig:                   &ToolConfig{Tools: []Tool{{ToolSpec: &ToolSpec{Name: "get", InputSchema: InputSchema{JSON: []byte(`{"type":"object"}`)}}}}},
		AdditionalModelRequestFields: []byte(`{"thinking":{"type":"enabled","budget_tokens":2048}}`),
		InferenceConfig:              &InferenceConfig{MaxTokens: aws.Int32(100)}, // not counted: CountTokens has no such field
	}
	n, err := c.CountTokens(t.Context(), model, req)
	require.NoError(t, err)
	assert.Equal(t, 1234, n)

	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	sdk := bedrockruntime.NewFromConfig(testConfig(srv.URL, 1), func(o *bedrockruntime.Options) { o.HTTPClient = srv.Client() })
	_, err = sdk.CountTokens(t.Context(), &bedrockruntime.CountTokensInput{ModelId: aws.String(model),
		Input: &types.CountTokensInputMemberConverse{Value: types.ConverseTokensRequest{
			Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi <&>"}}}},
			System:   []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}},
			ToolConfig: &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String("get"),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object"})}}}}},
			AdditionalModelRequestFields: document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}}),
		}}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens", got[0].path)
	assert.Equal(t, got[1].path, got[0].path, "the SDK's path")
	assert.Equal(t, got[1].body, got[0].body, "the SDK's body")
	assert.NoError(t, sigErr, "the signature verifies as AWS checks it")
}

// TestCountTokensRefused: Bedrock's refusal of a count is an *APIError with its code.
func TestCountTokensRefused(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "ValidationException")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"message":"The provided model doesn't support counting tokens."}`)
	}), 1)
	_, err := c.CountTokens(t.Context(), "us.anthropic.claude-sonnet-4-5-20250929-v1:0", simpleRequest)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, CodeValidation, apiErr.Code)
	assert.Equal(t, "The provided model doesn't support counting tokens.", apiErr.Message)
}
