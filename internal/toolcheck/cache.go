package toolcheck

import (
	"bytes"
	"container/list"
	"errors"
	"hash/maphash"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds of a Cache: the schemas of every tool every client offers, one entry each; the
// source bytes bound the memory a few huge schemas may take.
const (
	DefaultMaxEntries = 1024
	DefaultMaxBytes   = 32 << 20
)

// Schema is a compiled tool schema. A nil *Schema checks only that the arguments are a
// JSON object (a tool without parameters).
type Schema struct {
	s *jsonschema.Schema
}

// Cache keeps compiled schemas by the bytes of their source, least recently used first
// out. It is safe for concurrent use. Two requests that compile the same new schema at
// once both compile it; one of the results is kept.
type Cache struct {
	maxEntries, maxBytes int
	seed                 maphash.Seed

	mu    sync.Mutex
	lru   *list.List                 // of *entry, most recently used first
	byKey map[uint64][]*list.Element // maphash of the source → entries (a collision keeps both)
	bytes int
}

type entry struct {
	key    uint64
	source []byte
	schema *Schema
	err    error // why source does not compile; schema is nil then
}

// NewCache returns a cache of at most maxEntries schemas whose sources add up to at most
// maxBytes; zero or less takes the defaults.
func NewCache(maxEntries, maxBytes int) *Cache {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Cache{maxEntries: maxEntries, maxBytes: maxBytes, seed: maphash.MakeSeed(),
		lru: list.New(), byKey: map[uint64][]*list.Element{}}
}

// ErrNoCache is Schema's error on a nil Cache.
var ErrNoCache = errors.New("toolcheck: no schema cache")

// Schema returns the compiled schema of source, a tool's parameters as JSON text (nil or
// empty: no parameters, a nil *Schema). err says why the schema cannot be compiled: its
// calls go unchecked. fresh reports that this call compiled source, so a caller logs a
// failure once per schema (once per time it enters the cache).
func (c *Cache) Schema(source []byte) (s *Schema, err error, fresh bool) {
	if len(source) == 0 {
		return nil, nil, false
	}
	if c == nil {
		return nil, ErrNoCache, false
	}
	key := maphash.Bytes(c.seed, source)
	if e, ok := c.get(key, source); ok {
		return e.schema, e.err, false
	}
	compiled, err := compile(source)
	e := &entry{key: key, source: bytes.Clone(source), err: err}
	if err == nil {
		e.schema = &Schema{s: compiled}
	}
	c.put(e)
	return e.schema, e.err, true
}

func (c *Cache) get(key uint64, source []byte) (*entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range c.byKey[key] {
		if e := el.Value.(*entry); bytes.Equal(e.source, source) {
			c.lru.MoveToFront(el)
			return e, true
		}
	}
	return nil, false
}

func (c *Cache) put(e *entry) {
	if len(e.source) > c.maxBytes {
		return // larger than the whole cache: compiled for this call only
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range c.byKey[e.key] {
		if bytes.Equal(el.Value.(*entry).source, e.source) {
			return // another request compiled it meanwhile
		}
	}
	c.byKey[e.key] = append(c.byKey[e.key], c.lru.PushFront(e))
	c.bytes += len(e.source)
	for c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *Cache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	c.bytes -= len(e.source)
	els := c.byKey[e.key]
	for i := range els {
		if els[i] == el {
			els = append(els[:i], els[i+1:]...)
			break
		}
	}
	if len(els) == 0 {
		delete(c.byKey, e.key)
	} else {
		c.byKey[e.key] = els
	}
}

// Len is the number of schemas the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
