// Package store holds the state the gateway's replicas share (docs/PROTOCOL.md 14.3): the
// counters of the keys' limits, and the values behind the reasoning cache and failover
// affinity. Memory keeps counters in one process; Redis (redis.go) shares counters and
// values between every replica that names the same redis_url, its replies bounded
// (resp.go), and Guard (guard.go) stands in front of it: every call the gateway makes goes
// through the Guard, which bounds it by its request's budget (WithBudget), skips it while
// a ping says Redis is down, counts and logs failures, and tells /readyz and /metrics
// whether Redis answers.
//
// A store error means the store could not answer in time, or was not asked. Callers apply
// the outage policy of 14.3: limits fail open, caches fall back to their local copy.
package store

import (
	"context"
	"sync"
	"time"
)

// Counters are fixed-window counters: a counter is created by its first Add and expires
// its TTL later, which ends its window.
type Counters interface {
	// Add adds each delta to its counter, creating a missing one to expire after the
	// delta's TTL, all at once: no other Add comes between them. When a delta with a Limit
	// finds its counter already at or over that limit, nothing is added and ok is false.
	// counts are the counters' values after the additions, or as they stand when refused,
	// in the order of deltas.
	Add(ctx context.Context, deltas ...Delta) (counts []int64, ok bool, err error)
	// Counts returns the values of the counters at keys, 0 for a missing one.
	Counts(ctx context.Context, keys ...string) ([]int64, error)
}

// Delta is one change of a counter.
type Delta struct {
	Key string
	N   int64
	// TTL is the life of the counter when this creates it.
	TTL time.Duration
	// Limit, when above 0, refuses the Add while the counter is at or over it.
	Limit int64
}

// Refused is the index of the first delta of a refused Add whose counter was at or over
// its limit, given the counts Add returned; -1 when there is none.
func Refused(deltas []Delta, counts []int64) int {
	for i, d := range deltas {
		if d.Limit > 0 && i < len(counts) && counts[i] >= d.Limit {
			return i
		}
	}
	return -1
}

// Values are byte values that expire.
type Values interface {
	// Put stores value under key for ttl, replacing what was there.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Get returns the value under key; ok is false when there is none or it expired.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// GetMany returns the values under keys in one call, in their order, nil where there
	// is none.
	GetMany(ctx context.Context, keys ...string) ([][]byte, error)
}

// Deleter deletes values: the stored responses a client deletes.
type Deleter interface {
	// Delete removes the value under key; a missing one is no error.
	Delete(ctx context.Context, key string) error
}

// Memory is Counters in one process. The zero value is not usable; use NewMemory.
type Memory struct {
	now func() time.Time

	mu       sync.Mutex
	counters map[string]*counter
}

type counter struct {
	n       int64
	expires time.Time
}

// NewMemory returns counters in this process. now is the clock; nil is time.Now.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, counters: map[string]*counter{}}
}

// Add implements Counters. Creating a counter first drops the expired ones, so the map
// holds only the live windows of the configured keys' limits.
func (m *Memory) Add(_ context.Context, deltas ...Delta) ([]int64, bool, error) {
	now := m.now()
	out := make([]int64, len(deltas))
	m.mu.Lock()
	defer m.mu.Unlock()
	ok := true
	for i, d := range deltas {
		if c := m.counters[d.Key]; c != nil && now.Before(c.expires) {
			out[i] = c.n
		}
		ok = ok && (d.Limit <= 0 || out[i] < d.Limit)
	}
	if !ok {
		return out, false, nil
	}
	for i, d := range deltas {
		c := m.counters[d.Key]
		if c == nil || !now.Before(c.expires) {
			for k, old := range m.counters {
				if !now.Before(old.expires) {
					delete(m.counters, k)
				}
			}
			c = &counter{expires: now.Add(d.TTL)}
			m.counters[d.Key] = c
		}
		c.n += d.N
		out[i] = c.n
	}
	return out, true, nil
}

// Counts implements Counters.
func (m *Memory) Counts(_ context.Context, keys ...string) ([]int64, error) {
	now := m.now()
	out := make([]int64, len(keys))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range keys {
		if c := m.counters[k]; c != nil && now.Before(c.expires) {
			out[i] = c.n
		}
	}
	return out, nil
}
