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
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/reasoning"
	"github.com/nirmata/llm-gateway/internal/route"
)

// TestAffinityExpires: over HTTP, through the Bedrock client and the simulator: a
// conversation that failed over keeps going to the target that answered it, and after 10
// minutes without an answer starts at the first target again.
func TestAffinityExpires(t *testing.T) {
	t.Parallel()
	const first, second = "us.anthropic.claude-sonnet-4-20250514-v1:0", "us.amazon.nova-pro-v1:0"
	fault, err := bedrocksim.ParseFault("throttle,times=1,model=" + first)
	require.NoError(t, err)
	sim := bedrocksim.New(bedrocksim.Options{Faults: []bedrocksim.Fault{fault}})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); srv.Close() })
	client, err := bedrock.NewClient(t.Context(), aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
	}, bedrock.ClientOptions{SigV4Only: true})
	require.NoError(t, err)
	c := clocktest.New(time.Unix(1_700_000_000, 0))
	m := metrics.New()
	s := New(client, Options{
		Aliases:  map[string][]route.Target{"agent": {{ModelID: first}, {ModelID: second}}},
		MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20, UpstreamTimeout: time.Minute, MaxConcurrent: 4,
		Metrics: m, Affinity: route.AffinityOptions{Now: c.Now},
	}, zap.NewNop())

	ask := func() string {
		req := &chat.Request{Model: "agent", Messages: []chat.Message{{Role: chat.RoleUser, Content: "Same conversation."}}}
		resp, res, err := s.Chat(t.Context(), req)
		require.NoError(t, err)
		assert.Equal(t, resp.Model, res.Model)
		return resp.Model
	}
	assert.Equal(t, second, ask(), "the first target is throttled")
	assert.EqualValues(t, 2, sim.Requests())
	c.Advance(affinityTTL - time.Second)
	assert.Equal(t, second, ask(), "the conversation stays")
	assert.EqualValues(t, 3, sim.Requests(), "straight to the second target")
	c.Advance(affinityTTL)
	assert.Equal(t, first, ask(), "10 minutes after the last answer: the first target again")
	assert.EqualValues(t, 4, sim.Requests())
	assert.InDelta(t, 1, counter(t, m, "gateway_failovers_total", map[string]string{"alias": "agent"}), 0)
}

// TestFailoverRestoresAcrossProfilesOfOneModel: 14.4 binds reasoning blocks to the
// foundation model, so after a failover to another region's profile of it the cache
// restores them there too.
func TestFailoverRestoresAcrossProfilesOfOneModel(t *testing.T) {
	t.Parallel()
	const us, eu = "us.anthropic.claude-sonnet-4-20250514-v1:0", "eu.anthropic.claude-sonnet-4-20250514-v1:0"
	s := New(nil, Options{
		Aliases:  map[string][]route.Target{"agent": {{ModelID: us}, {ModelID: eu, Region: "eu-west-1"}}},
		MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20, DefaultMaxTokens: 4096,
		ReasoningCache: reasoning.Options{MaxEntries: 10, MaxBytes: 1 << 20, TTL: time.Hour},
	}, zap.NewNop())
	s.reasoning.Store(t.Context(), "k", us, []string{"call_1"}, []chat.ReasoningBlock{{Text: "think", Signature: "sig"}})
	req := &chat.Request{KeyID: "k", Model: "agent", ReasoningEffort: "low",
		Tools: []chat.Tool{{Name: "get", Parameters: []byte(`{"type":"object"}`)}},
		Messages: []chat.Message{
			{Role: chat.RoleUser, Content: "q"},
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get", Arguments: "{}"}}},
			{Role: chat.RoleTool, ToolCallID: "call_1", Content: "21"},
		}}
	var res Result
	p, err := s.prepared(t.Context(), req, &res)
	require.NoError(t, err)
	assert.Equal(t, chat.ThinkingRestored, res.Thinking, "first target")
	require.True(t, s.nextTarget(p))
	assert.Equal(t, eu, p.res.Model)
	assert.Equal(t, chat.ThinkingRestored, p.res.Thinking, "second target: same foundation model")
}

// affinityTTL is how long a conversation keeps going to the target that answered it
// (docs/PROTOCOL.md 14.4).
const affinityTTL = 10 * time.Minute
