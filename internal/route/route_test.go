package route

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/store/storetest"
)

// TestRouteOrder: the affinity target first, then the others in their order, each once.
func TestRouteOrder(t *testing.T) {
	t.Parallel()
	a := &alias{name: "agent"}
	for _, id := range []string{"a", "b", "c", "d"} {
		a.targets = append(a.targets, newTarget(Target{ModelID: id}, nil))
	}
	for first, want := range map[int]string{0: "abcd", 1: "bacd", 2: "cabd", 3: "dabc"} {
		r := Route{alias: a, first: first}
		got := ""
		for k := range r.len() {
			got += r.at(k).ModelID
		}
		assert.Equal(t, want, got, "first %d", first)
	}
	one := Route{one: newTarget(Target{ModelID: "m"}, nil)}
	assert.Equal(t, 1, one.len())
	assert.False(t, one.More())
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

	store := storetest.New()
	replica1 := newAffinity(AffinityOptions{}, store)
	replica2 := newAffinity(AffinityOptions{}, store)
	replica1.remember(ctx, k1, "c")
	assert.Equal(t, 2, replica2.lookup(ctx, a, k1), "another replica reads the store")
	assert.Len(t, store.Data, 1)
	for key := range store.Data {
		assert.Len(t, key, len(affinityKeyPrefix)+64, "a digest, never the conversation")
	}

	store.Broken = true
	replica1.remember(ctx, k2, "b")
	assert.Equal(t, 1, replica1.lookup(ctx, a, k2), "the local memory answers while the store fails")
	assert.Equal(t, 0, replica2.lookup(ctx, a, k2))
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
	store := storetest.New()
	r1 := newAffinity(AffinityOptions{}, store)
	r2 := newAffinity(AffinityOptions{}, store)
	r1.remember(ctx, k, "b")
	assert.Equal(t, 1, r2.lookup(ctx, a, k))
	r2.remember(ctx, k, "c")
	assert.Equal(t, 2, r1.lookup(ctx, a, k), "replica 1 should follow the shared store")
}
