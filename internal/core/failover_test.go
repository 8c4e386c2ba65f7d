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
)

// TestRouteOrder: the affinity target first, then the others in their order, each once.
func TestRouteOrder(t *testing.T) {
	t.Parallel()
	a := &alias{name: "agent"}
	for _, id := range []string{"a", "b", "c", "d"} {
		a.targets = append(a.targets, newTarget(Target{ModelID: id}, nil))
	}
	for first, want := range map[int]string{0: "abcd", 1: "bacd", 2: "cabd", 3: "dabc"} {
		r := route{alias: a, first: first}
		got := ""
		for k := range r.len() {
			got += r.at(k).ModelID
		}
		assert.Equal(t, want, got, "first %d", first)
	}
	one := route{one: newTarget(Target{ModelID: "m"}, nil)}
	assert.Equal(t, 1, one.len())
	assert.False(t, one.more())
	assert.Equal(t, "m", one.target().ModelID)
}

func TestTargetNames(t *testing.T) {
	t.Parallel()
	tg := newTarget(Target{ModelID: "us.anthropic.claude-sonnet-4-20250514-v1:0", Region: "us-west-2"}, nil)
	assert.Equal(t, "us.anthropic.claude-sonnet-4-20250514-v1:0@us-west-2", tg.name)
	assert.Equal(t, "anthropic.claude-sonnet-4-20250514-v1:0", tg.family, "the foundation model")
	opaque := "arn:aws:bedrock:us-east-1:111122223333:application-inference-profile/abc"
	assert.Equal(t, opaque, newTarget(Target{ModelID: opaque}, nil).family, "an opaque profile is its own")
}

// TestConversationOf: every turn of a conversation has the same key, whatever history it
// grows; the calling key, the alias, the system prompt, the tools and the first user
// message each tell conversations apart; prompt_cache_key wins over the messages.
func TestConversationOf(t *testing.T) {
	t.Parallel()
	base := func() *chat.Request {
		return &chat.Request{KeyID: "k1", Tools: []chat.Tool{{Name: "get", Parameters: []byte(`{"type":"object"}`)}}, Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: "sys"}, {Role: chat.RoleUser, Content: "first"}}}
	}
	key := conversationOf("agent", base())
	later := base()
	later.Messages = append(later.Messages, chat.Message{Role: chat.RoleAssistant, Content: "a"}, chat.Message{Role: chat.RoleUser, Content: "second"})
	assert.Equal(t, key, conversationOf("agent", later), "a later turn")

	for name, change := range map[string]func(r *chat.Request){
		"calling key":   func(r *chat.Request) { r.KeyID = "k2" },
		"system prompt": func(r *chat.Request) { r.Messages[0].Content = "other" },
		"tools":         func(r *chat.Request) { r.Tools[0].Parameters = []byte(`{}`) },
		"first message": func(r *chat.Request) { r.Messages[1].Content = "other" },
		"image": func(r *chat.Request) {
			r.Messages[1].Parts = []chat.Part{{Image: &chat.ImageURL{URL: "data:image/png;base64,AA=="}}}
		},
		"boundaries": func(r *chat.Request) { r.Messages[0].Content, r.Messages[1].Content = "sysf", "irst" },
	} {
		r := base()
		change(r)
		assert.NotEqual(t, key, conversationOf("agent", r), name)
	}
	assert.NotEqual(t, key, conversationOf("other", base()), "alias")

	withKey := base()
	withKey.CacheKey = "conv-1"
	other := base()
	other.CacheKey = "conv-1"
	other.Messages[1].Content = "unrelated"
	assert.Equal(t, conversationOf("agent", withKey), conversationOf("agent", other), "prompt_cache_key names the conversation")
	assert.NotEqual(t, key, conversationOf("agent", withKey))
}

// TestAffinity: a conversation's target is remembered for 10 minutes after its answer, in
// a bounded LRU, and shared through the store between replicas; a store that fails leaves
// the local memory to answer.
func TestAffinity(t *testing.T) {
	t.Parallel()
	a := &alias{name: "agent"}
	for _, id := range []string{"a", "b", "c"} {
		a.targets = append(a.targets, newTarget(Target{ModelID: id}, nil))
	}
	ctx := t.Context()
	k1, k2, k3 := conversationKey{1}, conversationKey{2}, conversationKey{3}

	c := clocktest.New(time.Unix(1_700_000_000, 0))
	local := newAffinity(AffinityOptions{MaxEntries: 2, Now: c.Now}, nil)
	assert.Equal(t, 0, local.lookup(ctx, a, k1), "unknown: the first target")
	local.remember(ctx, k1, "c")
	assert.Equal(t, 2, local.lookup(ctx, a, k1))
	c.Advance(affinityTTL - time.Second)
	assert.Equal(t, 2, local.lookup(ctx, a, k1))
	local.remember(ctx, k1, "b") // a later answer restarts the 10 minutes
	c.Advance(affinityTTL - time.Second)
	assert.Equal(t, 1, local.lookup(ctx, a, k1))
	c.Advance(time.Second)
	assert.Equal(t, 0, local.lookup(ctx, a, k1), "expired")

	local.remember(ctx, k1, "b")
	local.remember(ctx, k2, "c")
	local.remember(ctx, k3, "b")
	assert.Equal(t, 0, local.lookup(ctx, a, k1), "the least recently answered went first")
	assert.Equal(t, 2, local.lookup(ctx, a, k2))
	assert.Equal(t, 2, local.lookup(ctx, a, k2))
	local.remember(ctx, k2, "gone@nowhere")
	assert.Equal(t, 0, local.lookup(ctx, a, k2), "a target the alias no longer has")

	store := newSharedValues()
	replica1 := newAffinity(AffinityOptions{}, store)
	replica2 := newAffinity(AffinityOptions{}, store)
	replica1.remember(ctx, k1, "c")
	assert.Equal(t, 2, replica2.lookup(ctx, a, k1), "another replica reads the store")
	assert.Len(t, store.values, 1)
	for key := range store.values {
		assert.Len(t, key, len(affinityKeyPrefix)+64, "a digest, never the conversation")
	}

	store.broken = true
	replica1.remember(ctx, k2, "b")
	assert.Equal(t, 1, replica1.lookup(ctx, a, k2), "the local memory answers while the store fails")
	assert.Equal(t, 0, replica2.lookup(ctx, a, k2))
}

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
		Aliases:  map[string][]Target{"agent": {{ModelID: first}, {ModelID: second}}},
		MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20, UpstreamTimeout: time.Minute, MaxConcurrent: 4,
		Metrics: m, Affinity: AffinityOptions{Now: c.Now},
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

// TestAffinitySharedStoreDecides: replica 1 answered a conversation on target b, then
// replica 2 failed it over to c: replica 1 follows the store, not its own memory
// (docs/PROTOCOL.md 14.4: "the target that last answered it").
func TestAffinitySharedStoreDecides(t *testing.T) {
	t.Parallel()
	a := &alias{name: "agent"}
	for _, id := range []string{"a", "b", "c"} {
		a.targets = append(a.targets, newTarget(Target{ModelID: id}, nil))
	}
	ctx := t.Context()
	k := conversationKey{9}
	store := newSharedValues()
	r1 := newAffinity(AffinityOptions{}, store)
	r2 := newAffinity(AffinityOptions{}, store)
	r1.remember(ctx, k, "b")
	assert.Equal(t, 1, r2.lookup(ctx, a, k))
	r2.remember(ctx, k, "c")
	assert.Equal(t, 2, r1.lookup(ctx, a, k), "replica 1 should follow the shared store")
}

// TestFailoverRestoresAcrossProfilesOfOneModel: 14.4 binds reasoning blocks to the
// foundation model, so after a failover to another region's profile of it the cache
// restores them there too.
func TestFailoverRestoresAcrossProfilesOfOneModel(t *testing.T) {
	t.Parallel()
	const us, eu = "us.anthropic.claude-sonnet-4-20250514-v1:0", "eu.anthropic.claude-sonnet-4-20250514-v1:0"
	s := New(nil, Options{
		Aliases:  map[string][]Target{"agent": {{ModelID: us}, {ModelID: eu, Region: "eu-west-1"}}},
		MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20, DefaultMaxTokens: 4096,
		ReasoningCache: ReasoningCacheOptions{MaxEntries: 10, MaxBytes: 1 << 20, TTL: time.Hour},
	}, zap.NewNop())
	s.reasoning.store(t.Context(), "k", us, []string{"call_1"}, []chat.ReasoningBlock{{Text: "think", Signature: "sig"}})
	req := &chat.Request{KeyID: "k", Model: "agent", ReasoningEffort: "low",
		Tools: []chat.Tool{{Name: "get", Parameters: []byte(`{"type":"object"}`)}},
		Messages: []chat.Message{
			{Role: chat.RoleUser, Content: "q"},
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get", Arguments: "{}"}}},
			{Role: chat.RoleTool, ToolCallID: "call_1", Content: "21"},
		}}
	var res Result
	p, err := s.prepare(t.Context(), req, &res)
	require.NoError(t, err)
	assert.Equal(t, chat.ThinkingRestored, res.Thinking, "first target")
	require.True(t, s.nextTarget(t.Context(), "r", p, &res))
	assert.Equal(t, eu, res.Model)
	assert.Equal(t, chat.ThinkingRestored, res.Thinking, "second target: same foundation model")
}
