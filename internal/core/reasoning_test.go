package core

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
)

const model = "anthropic.claude-sonnet-4-20250514-v1:0"

var blocks = []chat.ReasoningBlock{{Text: "think", Signature: "sig"}, {Redacted: true, Data: "ZGF0YQ=="}}

// clock is a settable time for the cache's TTL.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newCache(entries, bytes int) (*reasoningCache, *clock) {
	c := &clock{now: time.Unix(1e9, 0)}
	return newReasoningCache(ReasoningCacheOptions{MaxEntries: entries, MaxBytes: bytes, TTL: time.Hour, Now: c.Now}), c
}

// TestReasoningCacheLookup: a turn is found by all its ids, by the key that stored it, for
// the model that wrote it, and only while its TTL runs.
func TestReasoningCacheLookup(t *testing.T) {
	t.Parallel()
	c, clk := newCache(10, 1<<20)
	c.store("k1", model, []string{"a", "b"}, blocks)

	got, ok := c.lookup("k1", model, []string{"b", "a"})
	require.True(t, ok)
	assert.Equal(t, blocks, got)

	for name, tt := range map[string]struct {
		key, model string
		ids        []string
	}{
		"another key":         {"k2", model, []string{"a", "b"}},
		"another model":       {"k1", "anthropic.claude-opus-4-6-v1", []string{"a", "b"}},
		"some of the ids":     {"k1", model, []string{"a"}},
		"an id of no turn":    {"k1", model, []string{"a", "b", "c"}},
		"no ids":              {"k1", model, nil},
		"ids of two turns":    {"k1", model, []string{"a", "x"}},
		"an unknown id first": {"k1", model, []string{"x", "a"}},
	} {
		if name == "ids of two turns" {
			c.store("k1", model, []string{"x"}, blocks)
		}
		_, ok := c.lookup(tt.key, tt.model, tt.ids)
		assert.False(t, ok, name)
	}

	clk.advance(time.Hour)
	_, ok = c.lookup("k1", model, []string{"a", "b"})
	assert.False(t, ok, "expired")
	assert.Equal(t, 1, c.lru.Len(), "the expired turn was removed")
}

// TestReasoningCacheBounds: the least recently used turns go first, by count and by bytes;
// a turn larger than the cache is not kept.
func TestReasoningCacheBounds(t *testing.T) {
	t.Parallel()
	c, _ := newCache(2, 1<<20)
	c.store("k", model, []string{"1"}, blocks)
	c.store("k", model, []string{"2"}, blocks)
	_, ok := c.lookup("k", model, []string{"1"}) // 1 is now the most recent
	require.True(t, ok)
	c.store("k", model, []string{"3"}, blocks)
	_, ok = c.lookup("k", model, []string{"2"})
	assert.False(t, ok, "2 was the least recently used")
	for _, id := range []string{"1", "3"} {
		_, ok = c.lookup("k", model, []string{id})
		assert.True(t, ok, id)
	}

	big := []chat.ReasoningBlock{{Text: strings.Repeat("x", 3000), Signature: "s"}}
	c, _ = newCache(100, 8000)
	c.store("k", model, []string{"1"}, big)
	c.store("k", model, []string{"2"}, big)
	c.store("k", model, []string{"3"}, big)
	assert.LessOrEqual(t, c.bytes, 8000)
	_, ok = c.lookup("k", model, []string{"1"})
	assert.False(t, ok, "the oldest went to make room")
	_, ok = c.lookup("k", model, []string{"3"})
	assert.True(t, ok)

	c.store("k", model, []string{"huge"}, []chat.ReasoningBlock{{Text: strings.Repeat("x", 9000)}})
	_, ok = c.lookup("k", model, []string{"huge"})
	assert.False(t, ok)

	// A reused id replaces the turn that had it.
	c, _ = newCache(10, 1<<20)
	c.store("k", model, []string{"a", "b"}, blocks)
	c.store("k", model, []string{"b"}, blocks[:1])
	_, ok = c.lookup("k", model, []string{"a", "b"})
	assert.False(t, ok)
	got, ok := c.lookup("k", model, []string{"b"})
	assert.True(t, ok)
	assert.Len(t, got, 1)
	assert.Equal(t, 1, c.lru.Len())
	assert.Len(t, c.byID, 1)
}

// TestRestoreReasoning: the blocks go back into the assistant turn the request's tool
// results answer, on a copy of the request, only when that turn has no signed block.
func TestRestoreReasoning(t *testing.T) {
	t.Parallel()
	s := &Service{}
	s.reasoning, _ = newCache(10, 1<<20)
	s.reasoning.store("k", model, []string{"c1", "c2"}, blocks)
	history := []chat.Message{
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1"}}},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c2"}}}, // merged into one turn
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "1"},
		{Role: chat.RoleTool, ToolCallID: "c2", Content: "2"},
		{Role: chat.RoleUser, Content: "and then?"}, // merged with the results
	}
	req := &chat.Request{KeyID: "k", Messages: history}
	got, ok := s.restoreReasoning(req, model)
	require.True(t, ok)
	assert.Equal(t, blocks, got.Messages[1].Reasoning)
	assert.Nil(t, req.Messages[1].Reasoning, "the client's request is not changed")

	_, ok = s.restoreReasoning(&chat.Request{KeyID: "other", Messages: history}, model)
	assert.False(t, ok)
	_, ok = s.restoreReasoning(&chat.Request{KeyID: "k", Messages: history[:3]}, model)
	assert.False(t, ok, "no tool results: nothing to restore")

	withBlock := append([]chat.Message(nil), history...)
	withBlock[1].Reasoning = []chat.ReasoningBlock{{Text: "own", Signature: "s"}}
	_, ok = s.restoreReasoning(&chat.Request{KeyID: "k", Messages: withBlock}, model)
	assert.False(t, ok, "the client sent its own")

	unsigned := append([]chat.Message(nil), history...)
	unsigned[1].Reasoning = []chat.ReasoningBlock{{Text: "no signature"}}
	got, ok = s.restoreReasoning(&chat.Request{KeyID: "k", Messages: unsigned}, model)
	assert.True(t, ok, "an unsigned block is as good as none")
	assert.Equal(t, blocks, got.Messages[1].Reasoning)
}

// TestRestoreEarlierTurns: every tool turn the cache knows gets its blocks back, so the
// history reads as it did in the previous request and its prompt-cache prefix holds; the
// outcome is the answered turn's.
func TestRestoreEarlierTurns(t *testing.T) {
	t.Parallel()
	s := &Service{}
	s.reasoning, _ = newCache(10, 1<<20)
	first := []chat.ReasoningBlock{{Text: "first", Signature: "s1"}}
	second := []chat.ReasoningBlock{{Text: "second", Signature: "s2"}}
	s.reasoning.store("k", model, []string{"c1"}, first)
	history := []chat.Message{
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1"}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "1"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c2"}}},
		{Role: chat.RoleTool, ToolCallID: "c2", Content: "2"},
	}
	got, ok := s.restoreReasoning(&chat.Request{KeyID: "k", Messages: history}, model)
	assert.False(t, ok, "the answered turn is not in the cache")
	assert.Equal(t, first, got.Messages[1].Reasoning)

	s.reasoning.store("k", model, []string{"c2"}, second)
	got, ok = s.restoreReasoning(&chat.Request{KeyID: "k", Messages: history}, model)
	assert.True(t, ok)
	assert.Equal(t, first, got.Messages[1].Reasoning)
	assert.Equal(t, second, got.Messages[3].Reasoning)
}
