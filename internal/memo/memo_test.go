package memo

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetReturnsWhatPutKept(t *testing.T) {
	t.Parallel()
	m := New[string](1 << 10)
	in := []byte(`{"type":"object"}`)
	_, ok := m.Get(in)
	assert.False(t, ok)
	m.Put(in, "result", 6)
	in[0] = 'X' // the caller's bytes change; the memo kept a copy
	v, ok := m.Get([]byte(`{"type":"object"}`))
	require.True(t, ok)
	assert.Equal(t, "result", v)
	_, ok = m.Get(in)
	assert.False(t, ok)
}

// The bytes kept never pass the bound: past it, everything is forgotten and the new entry
// kept alone.
func TestBound(t *testing.T) {
	t.Parallel()
	m := New[int](100)
	for i := range 5 {
		m.Put(fmt.Appendf(nil, "input-%02d", i), i, 10) // 18 bytes each
	}
	assert.Equal(t, 5, m.Len(), "90 bytes: within the bound")
	m.Put([]byte("input-05"), 5, 10)
	assert.Equal(t, 1, m.Len(), "108 bytes would pass it")
	v, ok := m.Get([]byte("input-05"))
	assert.True(t, ok)
	assert.Equal(t, 5, v)
	_, ok = m.Get([]byte("input-00"))
	assert.False(t, ok)
}

// An input larger than a quarter of the bound is not kept, so one cannot empty the memo.
func TestLargeInputIsNotKept(t *testing.T) {
	t.Parallel()
	m := New[int](100)
	m.Put([]byte("small"), 1, 0)
	m.Put(bytes.Repeat([]byte("x"), 20), 2, 6) // 26 > 25
	assert.Equal(t, 1, m.Len())
	_, ok := m.Get([]byte("small"))
	assert.True(t, ok)
}

// Concurrent readers and writers (go test -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	m := New[int](1 << 12)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				in := fmt.Appendf(nil, "in-%d", (g*200+i)%50)
				if v, ok := m.Get(in); ok {
					assert.Equal(t, string(in), fmt.Sprintf("in-%d", v))
					continue
				}
				m.Put(in, (g*200+i)%50, 8)
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, m.Len(), 50)
}
