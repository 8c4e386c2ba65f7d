// Package respstore keeps the responses of OpenAI's Responses API that clients ask to
// store (docs/PROTOCOL.md 16): in the process (Memory, a least-recently-used cache bounded
// by bytes) or in the Redis the replicas share (store.Guard), for responses_ttl, each at
// most responses_max_bytes, each key at most responses_key_max_bytes in one responses_ttl.
// A record is visible to the key that created it only.
package respstore

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/store"
)

// Record is one stored response.
type Record struct {
	// Owner is the id of the key that created it.
	Owner string `json:"owner"`
	// Response is the response object as it was answered.
	Response jsontext.Value `json:"response"`
	// Input is the conversation's input items, a JSON array: the conversation it
	// continued, then the items its request sent, as the client wrote them.
	Input jsontext.Value `json:"input"`
	// Output is its output items as the next request's input items, a JSON array, its
	// reasoning sealed in encrypted_content whatever the client asked for.
	Output jsontext.Value `json:"output"`
}

// Backend is where records live: Memory, or the shared store's Guard.
type Backend interface {
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	store.Deleter
}

// Options configures a Store.
type Options struct {
	// TTL is how long a record is kept (responses_ttl).
	TTL time.Duration
	// MaxBytes bounds one record (responses_max_bytes).
	MaxBytes int
	// KeyMaxBytes bounds the bytes one key stores in one TTL (responses_key_max_bytes);
	// 0 stores nothing.
	KeyMaxBytes int64
	// Counters count what each key stored; Backend holds the records.
	Counters store.Counters
	Backend  Backend
}

// Store saves, loads and deletes records. Safe for concurrent use.
type Store struct{ opts Options }

// New returns the Store of opts.
func New(opts Options) *Store { return &Store{opts: opts} }

// ErrNotFound: no record of that id for that key: unknown, expired, deleted, or another
// key's, which is not told apart so that a key learns nothing of another's.
var ErrNotFound = errors.New("not found")

// Why a response was not stored: the values of x-gateway-not-stored.
const (
	NotStoredTooLarge    = "too_large"
	NotStoredKeyLimit    = "key_limit"
	NotStoredUnavailable = "store_unavailable"
)

// keyPrefix and countPrefix start the store keys of records and of the keys' counters.
const (
	keyPrefix   = "resp:"
	countPrefix = "resp-bytes:"
)

// Save stores r under id, or says why not (a NotStored value): over MaxBytes, over its
// key's KeyMaxBytes, or the backend failed. The key's counter is checked first and fails
// open, as every limit does when the shared store does not answer (docs/PROTOCOL.md 14.3).
func (s *Store) Save(ctx context.Context, id string, r *Record) (notStored string) {
	b, err := json.Marshal(r)
	if err != nil {
		return NotStoredUnavailable // raw JSON the surface wrote: never
	}
	if len(b) > s.opts.MaxBytes {
		return NotStoredTooLarge
	}
	if s.opts.KeyMaxBytes <= 0 {
		return NotStoredKeyLimit
	}
	_, ok, err := s.opts.Counters.Add(ctx, store.Delta{Key: countPrefix + r.Owner, N: int64(len(b)), TTL: s.opts.TTL, Limit: s.opts.KeyMaxBytes})
	if err == nil && !ok {
		return NotStoredKeyLimit
	}
	switch err := s.opts.Backend.Put(ctx, keyPrefix+id, b, s.opts.TTL); {
	case errors.Is(err, ErrTooLarge):
		return NotStoredTooLarge
	case err != nil:
		return NotStoredUnavailable
	}
	return ""
}

// Load returns the record of id if owner created it; ErrNotFound if not, or the
// backend's error.
func (s *Store) Load(ctx context.Context, owner, id string) (*Record, error) {
	b, ok, err := s.opts.Backend.Get(ctx, keyPrefix+id)
	if err != nil {
		return nil, err
	}
	var r Record
	if !ok || json.Unmarshal(b, &r) != nil || r.Owner != owner {
		return nil, ErrNotFound
	}
	return &r, nil
}

// Delete deletes the record of id if owner created it; ErrNotFound if not, or the
// backend's error.
func (s *Store) Delete(ctx context.Context, owner, id string) error {
	if _, err := s.Load(ctx, owner, id); err != nil {
		return err
	}
	return s.opts.Backend.Delete(ctx, keyPrefix+id)
}

// Memory is a Backend in the process: values expire, and once they hold more than its
// bytes the least recently used go first. Safe for concurrent use.
type Memory struct {
	max int
	now func() time.Time

	mu    sync.Mutex
	lru   list.List // of *entry, most recently used first
	byKey map[string]*list.Element
	bytes int
}

type entry struct {
	key     string
	value   []byte
	expires time.Time
}

// entryOverhead is what an entry costs besides its key and value, roughly.
const entryOverhead = 128

// NewMemory returns a Memory holding at most maxBytes; now is its clock, nil time.Now.
func NewMemory(maxBytes int, now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{max: maxBytes, now: now, byKey: map[string]*list.Element{}}
}

func size(e *entry) int { return entryOverhead + len(e.key) + len(e.value) }

// ErrTooLarge is Memory's answer to a value larger than all it may hold.
var ErrTooLarge = errors.New("larger than the memory of stored responses")

// Put stores a copy of value, dropping the least recently used values beyond the bound;
// a value larger than the bound is not kept (ErrTooLarge).
func (m *Memory) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	e := &entry{key: key, value: append([]byte(nil), value...), expires: m.now().Add(ttl)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[key]; ok {
		m.remove(el)
	}
	if size(e) > m.max {
		return ErrTooLarge
	}
	m.byKey[key] = m.lru.PushFront(e)
	m.bytes += size(e)
	for m.bytes > m.max {
		m.remove(m.lru.Back())
	}
	return nil
}

// Get returns the value under key unless it expired.
func (m *Memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[key]
	if !ok {
		return nil, false, nil
	}
	e := el.Value.(*entry)
	if !m.now().Before(e.expires) {
		m.remove(el)
		return nil, false, nil
	}
	m.lru.MoveToFront(el)
	return e.value, true, nil
}

// Delete removes the value under key.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[key]; ok {
		m.remove(el)
	}
	return nil
}

func (m *Memory) remove(el *list.Element) {
	e := m.lru.Remove(el).(*entry)
	delete(m.byKey, e.key)
	m.bytes -= size(e)
}
