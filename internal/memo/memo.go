// Package memo keeps the results of pure functions of bytes, so work that requests repeat
// with the same input (clients send the same tools, with the same schemas, on every turn)
// is done once per distinct input instead of once per request.
package memo

import "sync"

// Memo maps inputs to results within a bound on the bytes it keeps: when an entry would take
// it past the bound, it forgets every entry and starts again. That costs the next requests
// the work it saved, and keeps a client that sends ever new inputs from costing more than
// the bound, with no bookkeeping on the path of a hit. An input larger than a quarter of the
// bound is not kept. It is safe for concurrent use; its results are shared, so they must
// not be changed.
type Memo[V any] struct {
	max int

	mu      sync.RWMutex
	entries map[string]V
	size    int
}

// New returns a Memo that keeps at most maxBytes of inputs and results.
func New[V any](maxBytes int) *Memo[V] {
	return &Memo[V]{max: maxBytes, entries: map[string]V{}}
}

// Get returns the result kept for input.
func (m *Memo[V]) Get(input []byte) (V, bool) {
	m.mu.RLock()
	v, ok := m.entries[string(input)] // no copy of input: the map only reads it
	m.mu.RUnlock()
	return v, ok
}

// Put keeps v, a result of size bytes, for input; it keeps a copy of input.
func (m *Memo[V]) Put(input []byte, v V, size int) {
	size += len(input)
	if size > m.max/4 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[string(input)]; ok {
		return // another request put it meanwhile
	}
	if m.size+size > m.max {
		clear(m.entries)
		m.size = 0
	}
	m.entries[string(input)] = v
	m.size += size
}

// Len is the number of entries kept.
func (m *Memo[V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.entries)
}
