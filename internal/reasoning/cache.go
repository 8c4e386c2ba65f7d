// Package reasoning keeps Claude's reasoning blocks for clients that drop them
// (docs/PROTOCOL.md 11.4), and puts them back into the next request's history.
package reasoning

import (
	"container/list"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Options bounds the cache (docs/PROTOCOL.md 11.4).
type Options struct {
	// MaxEntries is the most turns kept; MaxBytes the most bytes of blocks and ids.
	MaxEntries, MaxBytes int
	// TTL is how long a turn is kept after it was stored.
	TTL time.Duration
	// Now is the clock; nil is time.Now. Tests move it past the TTL.
	Now func() time.Time
}

// Cache keeps the reasoning blocks of Claude's answers with tool calls, so a
// client that drops them (most OpenAI clients do) can still send the next tool turn with
// thinking on: Bedrock refuses that turn without its signed blocks (docs/BEDROCK.md G7).
// An entry is one answer: the calling key, the model that answered, the tool-call ids as
// the client received them, and the blocks byte for byte. It is found by any of its ids,
// and only by the key that stored it. Least recently used entries go first once a bound is
// reached; expired ones are never returned. Safe for concurrent use.
type Cache struct {
	opts Options
	// shared, when set, shares the entries with the other replicas (Redis:
	// docs/PROTOCOL.md 14.3): each entry stored is written there too, and the turns a
	// request needs that this replica lacks are read from there in one call. A failure
	// there leaves the local cache alone in charge.
	shared store.Values

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

// New returns a cache bounded by opts, sharing its entries through shared when set.
func New(opts Options, shared store.Values) *Cache {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{opts: opts, shared: shared, byID: map[idKey]*list.Element{}}
}

// entryOverhead is what an entry costs besides its strings: the list element, the map
// entries and the slices' headers, roughly.
const entryOverhead = 256

// newTurnEntry is an entry holding copies of ids and blocks, with its size.
func newTurnEntry(key, model string, ids []string, blocks []chat.ReasoningBlock, expires time.Time) *turnEntry {
	e := &turnEntry{key: key, model: model, ids: slices.Clone(ids), blocks: slices.Clone(blocks), expires: expires}
	e.size = entryOverhead + len(key) + len(model)
	for _, id := range ids {
		e.size += len(id) + 64
	}
	for _, b := range blocks {
		e.size += len(b.Text) + len(b.Signature) + len(b.Data) + 64
	}
	return e
}

// Store keeps the blocks of one answer under each of its tool-call ids, and writes them
// to the shared store when there is one. An answer without blocks or without calls is not
// kept, nor one larger than the whole cache.
func (c *Cache) Store(ctx context.Context, key, model string, ids []string, blocks []chat.ReasoningBlock) {
	if c == nil || len(ids) == 0 || len(blocks) == 0 || c.opts.MaxEntries <= 0 {
		return
	}
	e := newTurnEntry(key, model, ids, blocks, c.opts.Now().Add(c.opts.TTL))
	if e.size > c.opts.MaxBytes {
		return
	}
	c.insert(e)
	if c.sharing() {
		c.share(ctx, e)
	}
}

// insert adds an entry, replacing those that had one of its ids, and drops the least
// recently used ones beyond the bounds.
func (c *Cache) insert(e *turnEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range e.ids {
		if old, ok := c.byID[idKey{e.key, id}]; ok {
			c.remove(old)
		}
	}
	el := c.lru.PushFront(e)
	for _, id := range e.ids {
		c.byID[idKey{e.key, id}] = el
	}
	c.bytes += e.size
	for c.lru.Len() > c.opts.MaxEntries || c.bytes > c.opts.MaxBytes {
		c.remove(c.lru.Back())
	}
}

// remove drops an entry. Call with mu held.
func (c *Cache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*turnEntry)
	for _, id := range e.ids {
		if c.byID[idKey{e.key, id}] == el {
			delete(c.byID, idKey{e.key, id})
		}
	}
	c.bytes -= e.size
}

// lookup returns the blocks of the answer that made exactly the calls ids, stored by key
// for model or another profile of its foundation model (the blocks are bound to that:
// docs/PROTOCOL.md 14.4); ok is false unless every id finds that same live entry and the
// entry's calls are those ids.
func (c *Cache) lookup(key, model string, ids []string) ([]chat.ReasoningBlock, bool) {
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
	if capabilities.Foundation(e.model) != capabilities.Foundation(model) || !sameIDs(e.ids, ids) {
		return nil, false
	}
	c.lru.MoveToFront(found)
	return e.blocks, true
}

// sharing reports whether the entries are shared with other replicas.
func (c *Cache) sharing() bool {
	return c != nil && c.shared != nil && c.opts.MaxEntries > 0
}

// sharedTurn is an entry as the replicas share it (docs/PROTOCOL.md 14.3), the JSON value
// under its sharedKey. Key is checked on the way back, besides being part of the
// sharedKey: a key never reads another key's entries.
type sharedTurn struct {
	Key     string        `json:"key"`
	Model   string        `json:"model"`
	IDs     []string      `json:"ids"`
	Blocks  []sharedBlock `json:"blocks"`
	Expires time.Time     `json:"expires"`
}

// sharedBlock is a chat.ReasoningBlock in a sharedTurn, byte for byte.
type sharedBlock struct {
	Redacted  bool   `json:"redacted,omitzero"`
	Text      string `json:"text,omitzero"`
	Signature string `json:"signature,omitzero"`
	Data      string `json:"data,omitzero"`
}

// maxSharedIDBytes bounds the tool-call id in a shared key. Bedrock's ids are about 30
// bytes; an id a client made up longer than this is not looked for.
const maxSharedIDBytes = 256

// sharedKey is where an entry with these ids is shared: the calling key's identity
// (length first, so that no key and id pair reads as another) and the least of the
// ids. One key per entry is enough, since a lookup needs every id of the turn: the least
// of the ids a client sends is that of the entry they all find, so a store and a lookup
// are one call each. ok is false for an id over maxSharedIDBytes.
func sharedKey(key string, ids []string) (string, bool) {
	least := slices.Min(ids)
	if len(least) > maxSharedIDBytes {
		return "", false
	}
	return "reasoning:" + strconv.Itoa(len(key)) + ":" + key + ":" + least, true
}

// share writes an entry to the shared store, for its TTL, unless it is over
// store.MaxValueBytes (the local copy serves this replica alone then). A failure is the
// store Guard's to count and log: the local copy serves this replica.
func (c *Cache) share(ctx context.Context, e *turnEntry) {
	k, ok := sharedKey(e.key, e.ids)
	if !ok {
		return
	}
	t := sharedTurn{Key: e.key, Model: e.model, IDs: e.ids, Blocks: make([]sharedBlock, len(e.blocks)), Expires: e.expires}
	for i, b := range e.blocks {
		t.Blocks[i] = sharedBlock(b)
	}
	v, err := json.Marshal(&t)
	if err != nil || len(v) > store.MaxValueBytes { // a value the store could not read back
		return
	}
	_ = c.shared.Put(ctx, k, v, c.opts.TTL)
}

// lookupShared reads the turns the local cache lacks, each the ids of one assistant turn
// as the client sent them, from the shared store in one call (the latest store.MaxKeys of
// them), keeps those found locally, and returns their blocks (nil where none was found). A turn is found on the same terms
// as in lookup: stored by key, for model, with exactly these ids, and live.
func (c *Cache) lookupShared(ctx context.Context, key, model string, turns [][]string) [][]chat.ReasoningBlock {
	if !c.sharing() {
		return nil
	}
	keys := make([]string, 0, len(turns))
	asked := make([]int, 0, len(turns)) // the turn of each key
	for i, ids := range turns {
		if k, ok := sharedKey(key, ids); ok {
			keys, asked = append(keys, k), append(asked, i)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if n := len(keys) - store.MaxKeys; n > 0 { // the latest turns, the answered one last
		keys, asked = keys[n:], asked[n:]
	}
	values, err := c.shared.GetMany(ctx, keys...)
	if err != nil {
		return nil
	}
	now := c.opts.Now()
	out := make([][]chat.ReasoningBlock, len(turns))
	for i, raw := range values {
		if raw == nil || len(raw) > c.opts.MaxBytes {
			continue
		}
		var t sharedTurn
		if json.Unmarshal(raw, &t) != nil || len(t.Blocks) == 0 {
			continue
		}
		ids := turns[asked[i]]
		if t.Key != key || capabilities.Foundation(t.Model) != capabilities.Foundation(model) || !sameIDs(t.IDs, ids) || !now.Before(t.Expires) {
			continue
		}
		blocks := make([]chat.ReasoningBlock, len(t.Blocks))
		for j, b := range t.Blocks {
			blocks[j] = chat.ReasoningBlock(b)
		}
		expires := t.Expires
		if limit := now.Add(c.opts.TTL); expires.After(limit) {
			expires = limit // another replica's clock, or TTL, may differ
		}
		e := newTurnEntry(key, model, t.IDs, blocks, expires)
		if e.size > c.opts.MaxBytes {
			continue
		}
		c.insert(e)
		out[asked[i]] = e.blocks
	}
	return out
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

// Restore puts stored blocks back into the assistant turns with tool calls that
// carry none (docs/PROTOCOL.md 11.4), looking each turn's ids up as the client sent them,
// before the translator maps any. The turn the request's tool results answer is the one
// Bedrock needs (BEDROCK.md G7); earlier turns get theirs too, so the history reads as it
// did in the previous request and its prompt-cache prefix still matches (a client that
// keeps its blocks sends them all). With a shared cache, the turns this replica lacks are
// read from the shared store, all in one call. It returns the request to translate (a
// copy when it changed) and whether the answered turn got its blocks back.
func (c *Cache) Restore(ctx context.Context, req *chat.Request, model string) (*chat.Request, bool) {
	msgs := req.Messages
	answered := answeredTurn(msgs)
	if answered < 0 {
		return req, false // the last user turn answers no tool call: nothing is needed
	}
	var out []chat.Message // a copy, made at the first restoration
	restored := false
	var ids []string
	// The turns the local cache lacks, by their first message and ids; only with a
	// shared cache.
	var missed []int
	var missedIDs [][]string
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
		blocks, ok := c.lookup(req.KeyID, model, ids)
		if !ok {
			if c.sharing() {
				missed, missedIDs = append(missed, start), append(missedIDs, slices.Clone(ids))
			}
			continue
		}
		out = withReasoning(out, msgs, start, blocks)
		restored = restored || start == answered
	}
	if len(missed) > 0 {
		for i, blocks := range c.lookupShared(ctx, req.KeyID, model, missedIDs) {
			if blocks != nil {
				out = withReasoning(out, msgs, missed[i], blocks)
				restored = restored || missed[i] == answered
			}
		}
	}
	if out == nil {
		return req, false
	}
	r := *req
	r.Messages = out
	return &r, restored
}

// withReasoning puts blocks on msgs[start] in out, a copy of msgs made on the first call.
func withReasoning(out, msgs []chat.Message, start int, blocks []chat.ReasoningBlock) []chat.Message {
	if out == nil {
		out = slices.Clone(msgs)
	}
	out[start].Reasoning = blocks
	return out
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
