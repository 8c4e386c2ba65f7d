package core

import (
	"container/list"
	"slices"
	"sync"
	"time"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// ReasoningCacheOptions bounds the reasoning cache (docs/PROTOCOL.md 11.4).
type ReasoningCacheOptions struct {
	// MaxEntries is the most turns kept; MaxBytes the most bytes of blocks and ids.
	MaxEntries, MaxBytes int
	// TTL is how long a turn is kept after it was stored.
	TTL time.Duration
	// Now is the clock; nil is time.Now. Tests move it past the TTL.
	Now func() time.Time
}

// reasoningCache keeps the reasoning blocks of Claude's answers with tool calls, so a
// client that drops them (most OpenAI clients do) can still send the next tool turn with
// thinking on: Bedrock refuses that turn without its signed blocks (docs/BEDROCK.md G7).
// An entry is one answer: the calling key, the model that answered, the tool-call ids as
// the client received them, and the blocks byte for byte. It is found by any of its ids,
// and only by the key that stored it. Least recently used entries go first once a bound is
// reached; expired ones are never returned. Safe for concurrent use.
type reasoningCache struct {
	opts ReasoningCacheOptions

	mu    sync.Mutex
	lru   list.List // of *turnEntry, most recently used first
	byID  map[idKey]*list.Element
	bytes int
}

// idKey finds an entry: the calling key's id and one tool-call id.
type idKey struct{ key, id string }

// turnEntry is one stored answer.
type turnEntry struct {
	key, model string
	ids        []string
	blocks     []chat.ReasoningBlock
	expires    time.Time
	size       int
}

func newReasoningCache(opts ReasoningCacheOptions) *reasoningCache {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &reasoningCache{opts: opts, byID: map[idKey]*list.Element{}}
}

// entryOverhead is what an entry costs besides its strings: the list element, the map
// entries and the slices' headers, roughly.
const entryOverhead = 256

// store keeps the blocks of one answer under each of its tool-call ids. An answer without
// blocks or without calls is not kept, nor one larger than the whole cache.
func (c *reasoningCache) store(key, model string, ids []string, blocks []chat.ReasoningBlock) {
	if c == nil || len(ids) == 0 || len(blocks) == 0 || c.opts.MaxEntries <= 0 {
		return
	}
	e := &turnEntry{key: key, model: model, ids: slices.Clone(ids), blocks: slices.Clone(blocks),
		expires: c.opts.Now().Add(c.opts.TTL)}
	e.size = entryOverhead + len(key) + len(model)
	for _, id := range ids {
		e.size += len(id) + 64
	}
	for _, b := range blocks {
		e.size += len(b.Text) + len(b.Signature) + len(b.Data) + 64
	}
	if e.size > c.opts.MaxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if old, ok := c.byID[idKey{key, id}]; ok {
			c.remove(old)
		}
	}
	el := c.lru.PushFront(e)
	for _, id := range ids {
		c.byID[idKey{key, id}] = el
	}
	c.bytes += e.size
	for c.lru.Len() > c.opts.MaxEntries || c.bytes > c.opts.MaxBytes {
		c.remove(c.lru.Back())
	}
}

// remove drops an entry. Call with mu held.
func (c *reasoningCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*turnEntry)
	for _, id := range e.ids {
		if c.byID[idKey{e.key, id}] == el {
			delete(c.byID, idKey{e.key, id})
		}
	}
	c.bytes -= e.size
}

// lookup returns the blocks of the answer that made exactly the calls ids, stored by key
// for model; ok is false unless every id finds that same live entry and the entry's calls
// are those ids.
func (c *reasoningCache) lookup(key, model string, ids []string) ([]chat.ReasoningBlock, bool) {
	if c == nil || len(ids) == 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var found *list.Element
	for _, id := range ids {
		el, ok := c.byID[idKey{key, id}]
		if !ok || found != nil && el != found {
			return nil, false
		}
		found = el
	}
	e := found.Value.(*turnEntry)
	if !c.opts.Now().Before(e.expires) {
		c.remove(found)
		return nil, false
	}
	if e.model != model || !sameIDs(e.ids, ids) {
		return nil, false
	}
	c.lru.MoveToFront(found)
	return e.blocks, true
}

// sameIDs reports whether a and b hold the same ids, in any order.
func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range b {
		if !slices.Contains(a, id) {
			return false
		}
	}
	return true
}

// restoreReasoning puts stored blocks back into the assistant turns with tool calls that
// carry none (docs/PROTOCOL.md 11.4), looking each turn's ids up as the client sent them,
// before the translator maps any. The turn the request's tool results answer is the one
// Bedrock needs (BEDROCK.md G7); earlier turns get theirs too, so the history reads as it
// did in the previous request and its prompt-cache prefix still matches (a client that
// keeps its blocks sends them all). It returns the request to translate (a copy when it
// changed) and whether the answered turn got its blocks back.
func (s *Service) restoreReasoning(req *chat.Request, model string) (*chat.Request, bool) {
	msgs := req.Messages
	answered := answeredTurn(msgs)
	if answered < 0 {
		return req, false // the last user turn answers no tool call: nothing is needed
	}
	var out []chat.Message // a copy, made at the first restoration
	restored := false
	var ids []string
	for i := 0; i < len(msgs); {
		if msgs[i].Role != chat.RoleAssistant {
			i++
			continue
		}
		// Adjacent assistant messages merge into one turn.
		start, signed := i, false
		ids = ids[:0]
		for ; i < len(msgs) && msgs[i].Role == chat.RoleAssistant; i++ {
			signed = signed || hasSignedReasoning(&msgs[i])
			for _, tc := range msgs[i].ToolCalls {
				ids = append(ids, tc.ID)
			}
		}
		if signed || len(ids) == 0 {
			continue
		}
		blocks, ok := s.reasoning.lookup(req.KeyID, model, ids)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[start].Reasoning = blocks
		restored = restored || start == answered
	}
	if out == nil {
		return req, false
	}
	r := *req
	r.Messages = out
	return &r, restored
}

// answeredTurn is the index of the first message of the assistant turn whose tool calls
// the request's last user turn answers, or -1 when that turn holds no tool result.
func answeredTurn(msgs []chat.Message) int {
	end, results := len(msgs), false
	for end > 0 && msgs[end-1].Role != chat.RoleAssistant {
		results = results || msgs[end-1].Role == chat.RoleTool
		end--
	}
	if !results || end == 0 {
		return -1
	}
	start := end
	for start > 0 && msgs[start-1].Role == chat.RoleAssistant {
		start--
	}
	return start
}

// hasSignedReasoning reports whether a message carries a reasoning block Bedrock can take
// back (chat.ReasoningBlock.Replayable).
func hasSignedReasoning(m *chat.Message) bool {
	for i := range m.Reasoning {
		if m.Reasoning[i].Replayable() {
			return true
		}
	}
	for i := range m.Parts {
		if b := m.Parts[i].Reasoning; b != nil && b.Replayable() {
			return true
		}
	}
	return false
}
