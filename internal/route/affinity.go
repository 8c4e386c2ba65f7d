package route

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"sync"
	"time"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/store"
)

// affinityTTL is how long a conversation keeps going first to the target that last
// answered it, after that answer (docs/PROTOCOL.md 14.4).
const affinityTTL = 10 * time.Minute

// defaultAffinityEntries bounds the conversations one process remembers.
const defaultAffinityEntries = 10_000

// AffinityOptions bounds failover affinity.
type AffinityOptions struct {
	// MaxEntries is the most conversations remembered in this process; 0 is 10,000.
	MaxEntries int
	// Now is the clock; nil is time.Now. Tests move it past the 10 minutes.
	Now func() time.Time
}

// conversationKey is what affinity knows a conversation by: a digest (conversationOf).
type conversationKey [sha256.Size]byte

// affinity remembers which target of an alias last answered each conversation, so its
// next turn goes there first and finds that target's prompt cache warm (docs/PROTOCOL.md
// 14.4). It keeps a bounded LRU in this process, and writes through to shared, when set,
// so every replica sends a conversation the same way (14.3): a local miss reads shared,
// and a store error leaves the local memory alone to answer. Safe for concurrent use.
type affinity struct {
	max    int
	now    func() time.Time
	shared store.Values

	mu    sync.Mutex
	lru   list.List // of *affinityEntry, most recently answered first
	byKey map[conversationKey]*list.Element
}

// affinityEntry is one conversation's target, by name (target.name).
type affinityEntry struct {
	key     conversationKey
	target  string
	expires time.Time
}

func newAffinity(opts AffinityOptions, shared store.Values) *affinity {
	a := &affinity{max: opts.MaxEntries, now: opts.Now, shared: shared, byKey: map[conversationKey]*list.Element{}}
	if a.max <= 0 {
		a.max = defaultAffinityEntries
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// lookup returns the index of the target of al that last answered the conversation
// within affinityTTL, else 0, the first target. With a shared store the store decides,
// since another replica may have answered the conversation since this one did; this
// replica's memory answers only while the store fails. A target the configuration no
// longer has counts as none.
func (a *affinity) lookup(ctx context.Context, al *alias, key conversationKey) int {
	var name string
	if v, found, err := a.sharedGet(ctx, key); err == nil {
		if found {
			name = string(v)
		}
	} else {
		name, _ = a.local(key)
	}
	for i := range al.targets {
		if al.targets[i].name == name {
			return i
		}
	}
	return 0
}

// sharedGet reads the conversation's target from the shared store; without one, it fails
// as a store that does not answer does.
func (a *affinity) sharedGet(ctx context.Context, key conversationKey) ([]byte, bool, error) {
	if a.shared == nil {
		return nil, false, errNoShared
	}
	return a.shared.Get(ctx, affinityKey(key))
}

// errNoShared: no shared store is configured.
var errNoShared = errors.New("no shared store")

// local is the conversation's target in this process's memory.
func (a *affinity) local(key conversationKey) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	el, ok := a.byKey[key]
	if !ok {
		return "", false
	}
	e := el.Value.(*affinityEntry)
	if !a.now().Before(e.expires) {
		a.lru.Remove(el)
		delete(a.byKey, key)
		return "", false
	}
	return e.target, true
}

// remember records target as the one that answered the conversation now, for
// affinityTTL, here and in the shared store.
func (a *affinity) remember(ctx context.Context, key conversationKey, target string) {
	expires := a.now().Add(affinityTTL)
	a.mu.Lock()
	if el, ok := a.byKey[key]; ok {
		e := el.Value.(*affinityEntry)
		e.target, e.expires = target, expires
		a.lru.MoveToFront(el)
	} else {
		a.byKey[key] = a.lru.PushFront(&affinityEntry{key: key, target: target, expires: expires})
		for a.lru.Len() > a.max {
			old := a.lru.Remove(a.lru.Back()).(*affinityEntry)
			delete(a.byKey, old.key)
		}
	}
	a.mu.Unlock()
	if a.shared != nil {
		// An error leaves this replica's memory alone to answer (14.3); the store counts
		// and logs its own failures.
		_ = a.shared.Put(ctx, affinityKey(key), []byte(target), affinityTTL)
	}
}

// affinityKeyPrefix names affinity's values in the shared store.
const affinityKeyPrefix = "affinity:"

func affinityKey(key conversationKey) string { return affinityKeyPrefix + hex.EncodeToString(key[:]) }

// conversationOf is the affinity key of a request to alias (docs/PROTOCOL.md 14.4): the
// calling key with the request's prompt_cache_key, else with what stays the same on every
// turn of an agent's conversation: its system prompt (the system and developer messages
// before the first user message), its tools and its first user message. Every part is
// written with its length, so no two requests' parts run together into the same bytes.
func conversationOf(alias string, req *chat.Request) conversationKey {
	h := &digest{h: sha256.New()}
	field(h, alias)
	field(h, req.KeyID)
	if req.CacheKey != "" {
		field(h, "prompt_cache_key")
		field(h, req.CacheKey)
	} else {
		field(h, "conversation")
		for i := range req.Messages {
			m := &req.Messages[i]
			if m.Role == chat.RoleUser {
				field(h, "user")
				message(h, m)
				break
			}
			if m.Role == chat.RoleSystem || m.Role == chat.RoleDeveloper {
				field(h, "system")
				message(h, m)
			}
		}
		for i := range req.Tools {
			t := &req.Tools[i]
			field(h, "tool")
			field(h, t.Name)
			field(h, t.Description)
			field(h, string(t.Parameters))
		}
	}
	var key conversationKey
	h.h.Sum(key[:0])
	return key
}

// digest hashes strings without copying each into a slice of its own: documents and
// images can be megabytes.
type digest struct {
	h   hash.Hash
	buf [512]byte
}

// message writes what a message says: its text and its parts' contents.
func message(h *digest, m *chat.Message) {
	field(h, m.Content)
	for i := range m.Parts {
		p := &m.Parts[i]
		field(h, p.Text)
		if p.Image != nil {
			field(h, p.Image.URL)
		}
		if p.File != nil {
			field(h, p.File.Data)
		}
	}
}

// field writes s with its length before it.
func field(d *digest, s string) {
	binary.BigEndian.PutUint64(d.buf[:8], uint64(len(s)))
	d.h.Write(d.buf[:8])
	for len(s) > 0 {
		n := copy(d.buf[:], s)
		d.h.Write(d.buf[:n])
		s = s[n:]
	}
}
