package core

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/bedrocksim"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/quota"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/store"
)

// countService is a core on the real Bedrock client calling the simulator, in us-east-1,
// with an alias and a key limited to two requests a minute.
func countService(t *testing.T) (*Service, *bedrocksim.Server) {
	t.Helper()
	sim := bedrocksim.New(bedrocksim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); srv.Close() })
	client, err := bedrock.NewClient(t.Context(), aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
	}, bedrock.ClientOptions{SigV4Only: true})
	require.NoError(t, err)
	return New(client, Options{DefaultModel: "claude-sonnet-4-5", Region: "us-east-1",
		Aliases:  map[string][]route.Target{"fast": {{ModelID: "us.amazon.nova-lite-v1:0"}}},
		MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20, UpstreamTimeout: time.Minute, MaxConcurrent: 4,
		Metrics: metrics.New(),
		Quota:   quota.New(quota.Options{Keys: map[string]quota.Limits{"ci": {RequestsPerMinute: 2}}, Counters: store.NewMemory(time.Now)}),
	}, zap.NewNop()), sim
}

// TestCountTokens: a request is counted by Bedrock's CountTokens on a model that has it,
// translated as a chat call (Anthropic's name resolved to its profile, which the count is
// made without), the same count for the same request and more for a longer one; on a model
// without it, the count is an estimate that says so; a request a chat call would refuse
// is refused alike, and so is Bedrock's refusal of the count; a count is a request against the key's limits, and makes no model
// call.
func TestCountTokens(t *testing.T) {
	t.Parallel()
	s, sim := countService(t)
	req := func(model, text string) *chat.Request {
		return &chat.Request{Model: model, Messages: []chat.Message{{Role: chat.RoleUser, Content: text}},
			Tools: []chat.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}}
	}
	n, estimated, res, err := s.CountTokens(t.Context(), req("", "What is the weather in Paris?"))
	require.NoError(t, err)
	assert.False(t, estimated)
	assert.Positive(t, n)
	assert.Equal(t, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", res.Model)
	again, _, _, err := s.CountTokens(t.Context(), req("claude-sonnet-4-5-20250929", "What is the weather in Paris?"))
	require.NoError(t, err)
	assert.Equal(t, n, again)
	longer, _, _, err := s.CountTokens(t.Context(), req("", "What is the weather in Paris, in Berlin, in Madrid, in Rome and in Lisbon this week?"))
	require.NoError(t, err)
	assert.Greater(t, longer, n)

	for _, model := range []string{"fast", "claude-opus-5-5", "openai.gpt-oss-120b-1:0"} {
		n, estimated, _, err := s.CountTokens(t.Context(), req(model, "What is the weather in Paris?"))
		require.NoError(t, err, model)
		assert.True(t, estimated, model)
		assert.Positive(t, n, model)
	}

	_, _, _, err = s.CountTokens(t.Context(), req("gpt-4o", "hi"))
	assert.Equal(t, fault.KindNotFound, fault.Classify(t.Context(), err).Kind)
	bad := req("", "hi")
	bad.Messages = append(bad.Messages, chat.Message{Role: chat.RoleTool, Content: "x"})
	_, _, _, err = s.CountTokens(t.Context(), bad)
	f := fault.Classify(t.Context(), err)
	assert.Equal(t, fault.KindInvalid, f.Kind)
	assert.Contains(t, f.Message, "messages[1].tool_call_id")
	_, _, _, err = s.CountTokens(t.Context(), req("us.anthropic.claude-sonnet-4-5-20990101-v1:0", "hi"))
	f = fault.Classify(t.Context(), err)
	assert.Equal(t, fault.KindNotFound, f.Kind, "Bedrock's refusal, classified as a chat call's")
	assert.Contains(t, f.Message, "is not a model Bedrock knows")
	assert.Zero(t, sim.Requests(), "no model call")

	keyed := req("", "hi")
	keyed.KeyID = "ci"
	for range 2 {
		_, _, _, err = s.CountTokens(t.Context(), keyed)
		require.NoError(t, err)
	}
	_, _, _, err = s.CountTokens(t.Context(), keyed)
	assert.Equal(t, fault.KindRateLimited, fault.Classify(t.Context(), err).Kind, "requests_per_minute counts counts")
}
