// Package storetest has a store.Values in memory for tests, standing in for Redis between
// the caches of two replicas.
package storetest

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrDown is what every call of a broken Values returns.
var ErrDown = errors.New("store down")

// Values is a store.Values in memory that records its calls, and fails them all while
// Broken is set. Its fields are for the test to read and set between calls.
type Values struct {
	mu   sync.Mutex
	Data map[string][]byte
	// Puts are the keys written; Gets the keys of each read (a Get reads one).
	Puts []string
	Gets [][]string
	// Broken fails every call with ErrDown.
	Broken bool
}

// New returns an empty Values.
func New() *Values { return &Values{Data: map[string][]byte{}} }

// Put implements store.Values; it ignores the TTL.
func (v *Values) Put(_ context.Context, key string, value []byte, _ time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.Broken {
		return ErrDown
	}
	v.Puts = append(v.Puts, key)
	v.Data[key] = value
	return nil
}

// Get implements store.Values.
func (v *Values) Get(ctx context.Context, key string) ([]byte, bool, error) {
	got, err := v.GetMany(ctx, key)
	if err != nil {
		return nil, false, err
	}
	return got[0], got[0] != nil, nil
}

// GetMany implements store.Values.
func (v *Values) GetMany(_ context.Context, keys ...string) ([][]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.Gets = append(v.Gets, keys)
	if v.Broken {
		return nil, ErrDown
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = v.Data[k]
	}
	return out, nil
}
