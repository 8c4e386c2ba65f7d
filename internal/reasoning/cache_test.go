package reasoning

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/store/storetest"
)

const model = "anthropic.claude-sonnet-4-20250514-v1:0"

var blocks = []chat.ReasoningBlock{{Text: "think", Signature: "sig"}, {Redacted: true, Data: "ZGF0YQ=="}}

func newCache(entries, bytes int) (*Cache, *clocktest.Clock) {
	c := clocktest.New(time.Unix(1e9, 0))
	return New(Options{MaxEntries: entries, MaxBytes: bytes, TTL: time.Hour, Now: c.Now}, nil), c
}

// TestReasoningCacheLookup: a turn is found by all its ids, by the key that stored it, for
// the model that wrote it, and only while its TTL runs.
func TestReasoningCacheLookup(t *testing.T) {
	t.Parallel()
	c, clk := newCache(10, 1<<20)
	c.Store(t.Context(), "k1", model, []string{"a", "b"}, blocks)

	got, ok := c.lookup("k1", model, []string{"b", "a"})
	require.True(t, ok)
	assert.Equal(t, blocks, got)
	// Blocks are bound to the foundation model, not to the profile that served it: a
	// failover to another region's profile of it finds them (docs/PROTOCOL.md 14.4).
	other := "eu." + strings.TrimPrefix(model, "us.")
	require.NotEqual(t, model, other)
	got, ok = c.lookup("k1", other, []string{"a", "b"})
	require.True(t, ok, "another profile of the same model")
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
			c.Store(t.Context(), "k1", model, []string{"x"}, blocks)
		}
		_, ok := c.lookup(tt.key, tt.model, tt.ids)
		assert.False(t, ok, name)
	}

	clk.Advance(time.Hour)
	_, ok = c.lookup("k1", model, []string{"a", "b"})
	assert.False(t, ok, "expired")
	assert.Equal(t, 1, c.lru.Len(), "the expired turn was removed")
}

// TestReasoningCacheBounds: the least recently used turns go first, by count and by bytes;
// a turn larger than the cache is not kept.
func TestReasoningCacheBounds(t *testing.T) {
	t.Parallel()
	c, _ := newCache(2, 1<<20)
	c.Store(t.Context(), "k", model, []string{"1"}, blocks)
	c.Store(t.Context(), "k", model, []string{"2"}, blocks)
	_, ok := c.lookup("k", model, []string{"1"}) // 1 is now the most recent
	require.True(t, ok)
	c.Store(t.Context(), "k", model, []string{"3"}, blocks)
	_, ok = c.lookup("k", model, []string{"2"})
	assert.False(t, ok, "2 was the least recently used")
	for _, id := range []string{"1", "3"} {
		_, ok = c.lookup("k", model, []string{id})
		assert.True(t, ok, id)
	}

	big := []chat.ReasoningBlock{{Text: strings.Repeat("x", 3000), Signature: "s"}}
	c, _ = newCache(100, 8000)
	c.Store(t.Context(), "k", model, []string{"1"}, big)
	c.Store(t.Context(), "k", model, []string{"2"}, big)
	c.Store(t.Context(), "k", model, []string{"3"}, big)
	assert.LessOrEqual(t, c.bytes, 8000)
	_, ok = c.lookup("k", model, []string{"1"})
	assert.False(t, ok, "the oldest went to make room")
	_, ok = c.lookup("k", model, []string{"3"})
	assert.True(t, ok)

	c.Store(t.Context(), "k", model, []string{"huge"}, []chat.ReasoningBlock{{Text: strings.Repeat("x", 9000)}})
	_, ok = c.lookup("k", model, []string{"huge"})
	assert.False(t, ok)

	// A reused id replaces the turn that had it.
	c, _ = newCache(10, 1<<20)
	c.Store(t.Context(), "k", model, []string{"a", "b"}, blocks)
	c.Store(t.Context(), "k", model, []string{"b"}, blocks[:1])
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
	s, _ := newCache(10, 1<<20)
	s.Store(t.Context(), "k", model, []string{"c1", "c2"}, blocks)
	history := []chat.Message{
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1"}}},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c2"}}}, // merged into one turn
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "1"},
		{Role: chat.RoleTool, ToolCallID: "c2", Content: "2"},
		{Role: chat.RoleUser, Content: "and then?"}, // merged with the results
	}
	req := &chat.Request{KeyID: "k", Messages: history}
	got, ok := s.Restore(t.Context(), req, model)
	require.True(t, ok)
	assert.Equal(t, blocks, got.Messages[1].Reasoning)
	assert.Nil(t, req.Messages[1].Reasoning, "the client's request is not changed")

	_, ok = s.Restore(t.Context(), &chat.Request{KeyID: "other", Messages: history}, model)
	assert.False(t, ok)
	_, ok = s.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: history[:3]}, model)
	assert.False(t, ok, "no tool results: nothing to restore")

	withBlock := append([]chat.Message(nil), history...)
	withBlock[1].Reasoning = []chat.ReasoningBlock{{Text: "own", Signature: "s"}}
	_, ok = s.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: withBlock}, model)
	assert.False(t, ok, "the client sent its own")

	unsigned := append([]chat.Message(nil), history...)
	unsigned[1].Reasoning = []chat.ReasoningBlock{{Text: "no signature"}}
	got, ok = s.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: unsigned}, model)
	assert.True(t, ok, "an unsigned block is as good as none")
	assert.Equal(t, blocks, got.Messages[1].Reasoning)
}

// TestRestoreEarlierTurns: every tool turn the cache knows gets its blocks back, so the
// history reads as it did in the previous request and its prompt-cache prefix holds; the
// outcome is the answered turn's.
func TestRestoreEarlierTurns(t *testing.T) {
	t.Parallel()
	s, _ := newCache(10, 1<<20)
	first := []chat.ReasoningBlock{{Text: "first", Signature: "s1"}}
	second := []chat.ReasoningBlock{{Text: "second", Signature: "s2"}}
	s.Store(t.Context(), "k", model, []string{"c1"}, first)
	history := []chat.Message{
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1"}}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "1"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c2"}}},
		{Role: chat.RoleTool, ToolCallID: "c2", Content: "2"},
	}
	got, ok := s.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: history}, model)
	assert.False(t, ok, "the answered turn is not in the cache")
	assert.Equal(t, first, got.Messages[1].Reasoning)

	s.Store(t.Context(), "k", model, []string{"c2"}, second)
	got, ok = s.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: history}, model)
	assert.True(t, ok)
	assert.Equal(t, first, got.Messages[1].Reasoning)
	assert.Equal(t, second, got.Messages[3].Reasoning)
}

// replica is the cache of one replica, sharing through values, on clk.
func replica(values store.Values, clk *clocktest.Clock, maxBytes int) *Cache {
	return New(Options{MaxEntries: 10, MaxBytes: maxBytes, TTL: time.Hour, Now: clk.Now}, values)
}

// toolTurns is a history whose assistant turns call ids, one turn each, the last one
// answered.
func toolTurns(ids ...[]string) []chat.Message {
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "go"}}
	for _, turn := range ids {
		m := chat.Message{Role: chat.RoleAssistant}
		for _, id := range turn {
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id})
		}
		msgs = append(msgs, m)
		for _, id := range turn {
			msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: "ok"})
		}
	}
	return msgs
}

// TestSharedReasoningCache: a turn stored by one replica is restored by another, which
// keeps it from then on; on the same terms as locally: by the key that stored it, for the
// model that wrote it, with exactly its ids, while it lives.
func TestSharedReasoningCache(t *testing.T) {
	t.Parallel()
	values := storetest.New()
	clk := clocktest.New(time.Unix(1e9, 0))
	one, two := replica(values, clk, 1<<20), replica(values, clk, 1<<20)
	one.Store(t.Context(), "k", model, []string{"c2", "c1"}, blocks)
	require.Equal(t, []string{"reasoning:1:k:c1"}, values.Puts, "one value, under the least id")

	history := toolTurns([]string{"c1", "c2"})
	got, ok := two.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: history}, model)
	require.True(t, ok)
	assert.Equal(t, blocks, got.Messages[1].Reasoning, "byte for byte")
	require.Len(t, values.Gets, 1)
	_, ok = two.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: history}, model)
	assert.True(t, ok)
	assert.Len(t, values.Gets, 1, "kept locally: no second read")

	three := replica(values, clk, 1<<20)
	for name, req := range map[string]*chat.Request{
		"another key":     {KeyID: "k2", Messages: history},
		"no key":          {Messages: history},
		"some of the ids": {KeyID: "k", Messages: toolTurns([]string{"c1"})},
		"more ids":        {KeyID: "k", Messages: toolTurns([]string{"c1", "c2", "c3"})},
	} {
		_, ok := three.Restore(t.Context(), req, model)
		assert.False(t, ok, name)
	}
	_, ok = three.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: history}, "anthropic.claude-opus-4-6-v1")
	assert.False(t, ok, "another model")
	assert.Contains(t, values.Gets, []string{"reasoning:2:k2:c1"}, "another key asks under its own name")

	clk.Advance(time.Hour)
	_, ok = replica(values, clk, 1<<20).Restore(t.Context(), &chat.Request{KeyID: "k", Messages: history}, model)
	assert.False(t, ok, "expired, whatever the store still holds")
}

// TestSharedReasoningOneRead: the turns a replica lacks are read in one call; turns it
// has cost none; a value stored under a key's name by another key is not taken.
func TestSharedReasoningOneRead(t *testing.T) {
	t.Parallel()
	values := storetest.New()
	clk := clocktest.New(time.Unix(1e9, 0))
	one, two := replica(values, clk, 1<<20), replica(values, clk, 1<<20)
	first := []chat.ReasoningBlock{{Text: "first", Signature: "s1"}}
	second := []chat.ReasoningBlock{{Redacted: true, Data: "c2Vjb25k"}}
	one.Store(t.Context(), "k", model, []string{"a"}, first)
	one.Store(t.Context(), "k", model, []string{"b"}, second)
	two.Store(t.Context(), "k", model, []string{"c"}, blocks)

	got, ok := two.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{"a"}, []string{"x"}, []string{"b"}, []string{"c"})}, model)
	require.True(t, ok)
	assert.Equal(t, first, got.Messages[1].Reasoning)
	assert.Nil(t, got.Messages[3].Reasoning, "x is nowhere")
	assert.Equal(t, second, got.Messages[5].Reasoning)
	assert.Equal(t, blocks, got.Messages[7].Reasoning)
	assert.Equal(t, [][]string{{"reasoning:1:k:a", "reasoning:1:k:x", "reasoning:1:k:b"}}, values.Gets)

	// An entry of key "k2" put where "k"'s would be is not "k"'s.
	values.Data["reasoning:1:k:forged"] = values.Data["reasoning:1:k:a"]
	forged := strings.Replace(string(values.Data["reasoning:1:k:forged"]), `"key":"k"`, `"key":"k2"`, 1)
	forged = strings.Replace(forged, `"ids":["a"]`, `"ids":["forged"]`, 1)
	values.Data["reasoning:1:k:forged"] = []byte(forged)
	_, ok = two.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{"forged"})}, model)
	assert.False(t, ok)
}

// TestSharedReasoningBounds: what is not kept locally is not shared either (a turn larger
// than the cache, an id too long to be a key), and a shared value larger than the cache
// is not read into it.
func TestSharedReasoningBounds(t *testing.T) {
	t.Parallel()
	values := storetest.New()
	clk := clocktest.New(time.Unix(1e9, 0))
	small := replica(values, clk, 4000)
	small.Store(t.Context(), "k", model, []string{"big"}, []chat.ReasoningBlock{{Text: strings.Repeat("x", 5000), Signature: "s"}})
	long := strings.Repeat("i", maxSharedIDBytes+1)
	small.Store(t.Context(), "k", model, []string{long}, blocks)
	assert.Empty(t, values.Puts)
	_, ok := small.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{long})}, model)
	assert.True(t, ok, "kept locally all the same")
	_, ok = replica(values, clk, 4000).Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{long})}, model)
	assert.False(t, ok)
	assert.Empty(t, values.Gets, "an id that long is not looked for")

	large := replica(values, clk, 1<<20)
	large.Store(t.Context(), "k", model, []string{"big"}, []chat.ReasoningBlock{{Text: strings.Repeat("x", 5000), Signature: "s"}})
	require.Len(t, values.Puts, 1)
	_, ok = replica(values, clk, 4000).Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{"big"})}, model)
	assert.False(t, ok, "larger than this replica's cache")

	huge := replica(values, clk, 16<<20)
	huge.Store(t.Context(), "k", model, []string{"huge"}, []chat.ReasoningBlock{{Text: strings.Repeat("x", store.MaxValueBytes), Signature: "s"}})
	assert.Len(t, values.Puts, 1, "a value the store could not read back is not shared")
	_, ok = huge.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{"huge"})}, model)
	assert.True(t, ok, "kept locally all the same")

	off := New(Options{MaxEntries: 0, MaxBytes: 1 << 20, TTL: time.Hour}, values)
	off.Store(t.Context(), "k", model, []string{"z"}, blocks)
	assert.Len(t, values.Puts, 1, "max_entries 0 keeps nothing, anywhere")
}

// TestSharedReasoningReadsTheLatestTurns: a history of more turns the replica lacks than
// one read may ask for (store.MaxKeys) reads the latest of them, the answered turn among
// them, and restores it.
func TestSharedReasoningReadsTheLatestTurns(t *testing.T) {
	t.Parallel()
	values := storetest.New()
	clk := clocktest.New(time.Unix(1e9, 0))
	turns := make([][]string, store.MaxKeys+2)
	for i := range turns {
		turns[i] = []string{fmt.Sprintf("t%05d", i)}
	}
	last := turns[len(turns)-1]
	replica(values, clk, 1<<20).Store(t.Context(), "k", model, last, blocks)
	got, ok := replica(values, clk, 1<<20).Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns(turns...)}, model)
	require.True(t, ok, "the answered turn restored")
	assert.Equal(t, blocks, got.Messages[len(got.Messages)-2].Reasoning)
	require.Len(t, values.Gets, 1, "one read")
	require.Len(t, values.Gets[0], store.MaxKeys)
	assert.Equal(t, "reasoning:1:k:t00002", values.Gets[0][0], "the first two turns are not asked for")
}

// TestSharedReasoningStoreDown: with the shared store failing, each replica keeps and
// restores its own turns.
func TestSharedReasoningStoreDown(t *testing.T) {
	t.Parallel()
	values := storetest.New()
	values.Broken = true
	clk := clocktest.New(time.Unix(1e9, 0))
	one := replica(values, clk, 1<<20)
	one.Store(t.Context(), "k", model, []string{"c1"}, blocks)
	got, ok := one.Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{"c1"})}, model)
	require.True(t, ok)
	assert.Equal(t, blocks, got.Messages[1].Reasoning)
	_, ok = replica(values, clk, 1<<20).Restore(t.Context(), &chat.Request{KeyID: "k", Messages: toolTurns([]string{"c1"})}, model)
	assert.False(t, ok)
}

// TestRestoreWithoutSharedAllocates: without a shared store, restoring costs what it did
// before there was one: the copy of the messages and the ids' buffer.
func TestRestoreWithoutSharedAllocates(t *testing.T) {
	want := 2.0
	if raceDetector {
		want = 3 // the race detector's own, as before there was a shared store
	}
	s, _ := newCache(10, 1<<20)
	s.Store(t.Context(), "k", model, []string{"c1"}, blocks)
	req := &chat.Request{KeyID: "k", Messages: toolTurns([]string{"c1"}, []string{"c2"})}
	ctx := t.Context()
	assert.Equal(t, want, testing.AllocsPerRun(100, func() { s.Restore(ctx, req, model) }))
}
