package toolcheck

import (
	"bytes"
	"container/list"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/sync/singleflight"
)

// Bounds of a Cache: the schemas of every tool every client offers, one entry each, and
// the memory they keep compiled (an estimate, see retained), which a few large schemas
// reach long before the count.
const (
	DefaultMaxEntries = 1024
	DefaultMaxBytes   = 32 << 20
)

// Schema is a compiled tool schema. A nil *Schema checks only that the arguments are a
// JSON object (a tool without parameters).
type Schema struct {
	s *jsonschema.Schema
	// g is where its subschemas apply, for counting what a check costs.
	g *graph
	// fast judges valid calls without the library (fast.go); nil when the schema uses
	// keywords it does not judge.
	fast *fastNode
}

// Cache keeps compiled schemas by the bytes of their source, least recently used first
// out. It is safe for concurrent use. Requests that need the same new schema at once
// compile it once: the first compiles, the others wait for its result (a compile takes at
// most about 40 ms), each charged to its own Budget as though it compiled.
type Cache struct {
	maxEntries, maxBytes int
	limits               Limits
	seed                 maphash.Seed
	// compiling holds the compiles under way, by source.
	compiling singleflight.Group
	// compile is the compiler; tests hold it to see who waits.
	compile func(source []byte) (*jsonschema.Schema, error)

	mu       sync.Mutex
	lru      *list.List                 // of *entry, most recently used first
	byKey    map[uint64][]*list.Element // maphash of the source → entries (a collision keeps both)
	retained int                        // the entries' estimates, added up
	// admitted holds the maphash of schemas Admit measured within the limits.
	admitted map[uint64]struct{}
}

// maxAdmitted bounds what Admit remembers: 8 bytes and a map slot each; when full, it
// forgets them all and measures again.
const maxAdmitted = 1 << 14

type entry struct {
	key    uint64
	source []byte
	schema *Schema
	err    error // why source does not compile; schema is nil then
	// retained estimates the memory the entry keeps.
	retained int
}

// NewCache returns a cache of at most maxEntries schemas that keep at most maxBytes of
// memory by estimate; zero or less takes the defaults. It compiles only schemas within
// limits (the zero Limits: DefaultLimits), whatever its callers measured.
func NewCache(maxEntries, maxBytes int, limits Limits) *Cache {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Cache{maxEntries: maxEntries, maxBytes: maxBytes, limits: limits.OrDefaults(), seed: maphash.MakeSeed(),
		compile: compile, lru: list.New(), byKey: map[uint64][]*list.Element{}, admitted: map[uint64]struct{}{}}
}

// Admit measures a schema a request carries against the cache's limits (Measure), and
// remembers those within them by a hash of their text, so clients that send the same tools
// with every request pay for measuring them once. The hash is keyed by a random seed, so no
// client can aim a schema at a remembered one; and a false memory would only skip this
// early refusal: Schema measures a schema again before it compiles it.
func (c *Cache) Admit(source []byte) error {
	key := maphash.Bytes(c.seed, source)
	c.mu.Lock()
	_, ok := c.admitted[key]
	c.mu.Unlock()
	if ok {
		return nil
	}
	if _, err := Measure(source, c.limits); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.admitted) >= maxAdmitted {
		clear(c.admitted)
	}
	c.admitted[key] = struct{}{}
	return nil
}

// ErrNoCache is Schema's error on a nil Cache.
var ErrNoCache = errors.New("toolcheck: no schema cache")

// ErrOverBudget is Schema's error for a schema not in the cache whose compiling would
// cost more than its request's Budget has left: the schema is not compiled for that
// request.
var ErrOverBudget = errors.New("compiling the schema would spend more than the request's compile budget (schema_limits.compile_budget)")

// Schema returns the compiled schema of source, a tool's parameters as JSON text (nil or
// empty: no parameters, a nil *Schema), compiling it, within budget, when the cache does
// not have it. err says why the schema cannot be compiled: its calls go unchecked. fresh
// reports that this call compiled source (or found it outside the limits), so a caller
// logs a failure once per schema (once per time it enters the cache): of requests that
// need it at once, the one that compiles it.
func (c *Cache) Schema(source []byte, budget *Budget) (s *Schema, err error, fresh bool) {
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
	size, g, err := measureGraph(source, c.limits)
	if err == nil && !budget.take(size.Cost()) {
		return nil, ErrOverBudget, false
	}
	found, _, _ := c.compiling.Do(string(source), func() (any, error) {
		fresh = true
		e := &entry{key: key, source: bytes.Clone(source)}
		if err != nil {
			e.err = fmt.Errorf("the gateway refuses to compile this schema: %w", err)
			e.retained = entryOverhead + len(source)
		} else {
			compiled, err := c.compile(source)
			e.err, e.retained = err, retained(size)
			if err == nil {
				e.schema = &Schema{s: compiled, g: g, fast: newFast(compiled, g)}
				e.retained += e.schema.fast.retained()
			}
		}
		c.put(e)
		return e, nil
	})
	e := found.(*entry)
	return e.schema, e.err, fresh
}

// entryOverhead is what an entry keeps besides its source and its compiled schema.
const entryOverhead = 256

// retained estimates the memory a schema of size keeps once compiled, its source in the
// cache included: about 900 bytes a subschema in the library's structures, 300 in the graph
// that counts what a check costs, and twice its JSON pointer (its location, and the
// pointer the location was built from); for decoded
// values about 40 bytes each and 350 more an object (a Go map); the text of names and
// descriptions; for regular expressions about 600 bytes each and 45 for each 1 of their
// size; for numbers, up to 0.5 byte for each digit and each 1 of their exponent (the
// math/big.Rat of minimum, multipleOf…). TestCacheEstimate holds it above what the heap
// says for each shape of schema.
func retained(s Size) int {
	return 4<<10 + s.Subschemas*1280 + 2*s.PointerBytes + s.Values*48 + s.Objects*384 + 2*s.Bytes +
		s.Patterns<<10 + s.PatternSize*64 + s.NumberDigits
}

// Budget is what one request may still spend on its schemas: compiling those the cache
// lacks (Limits.CompileBudget, in Size.Cost), and checking its calls (as much as one check
// may cost, maxCost, for all of them together, repair attempts' calls included). The first
// compile of a request always goes ahead, so every schema within the limits can be
// compiled by some request; the limits bound that one. A nil Budget is unlimited. Not safe
// for concurrent use: it belongs to one request.
type Budget struct {
	left  int
	spent bool
	// checks is what the request's checks may still cost.
	checks int
}

// NewBudget returns the budget of one request.
func NewBudget(l Limits) *Budget { return &Budget{left: l.OrDefaults().CompileBudget, checks: maxCost} }

// takeCheck spends what one check costs and reports whether it could.
func (b *Budget) takeCheck(cost int) bool {
	switch {
	case b == nil:
		return true
	case cost > b.checks:
		return false
	}
	b.checks -= cost
	return true
}

// take spends cost and reports whether it could.
func (b *Budget) take(cost int) bool {
	switch {
	case b == nil:
		return true
	case b.spent && cost > b.left:
		return false
	}
	b.left, b.spent = b.left-cost, true
	return true
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
	if e.retained > c.maxBytes {
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
	c.retained += e.retained
	for c.lru.Len() > c.maxEntries || c.retained > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *Cache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	c.retained -= e.retained
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

// Retained is the memory the cache's schemas keep, by estimate.
func (c *Cache) Retained() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retained
}
