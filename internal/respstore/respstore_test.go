package respstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/redistest"
	"github.com/nirmata/llm-gateway/internal/store"
)

func record(owner string, n int) *Record {
	return &Record{Owner: owner, Response: jsontext.Value(`{"id":"resp_1","object":"response"}`),
		Input: jsontext.Value(`[{"type":"message","role":"user","content":"` + strings.Repeat("x", n) + `"}]`), Output: jsontext.Value(`[]`)}
}

// backends are the two a Store runs on: the process's memory and Redis behind its Guard.
func backends(t *testing.T) map[string]func(Options) *Store {
	return map[string]func(Options) *Store{
		"memory": func(o Options) *Store {
			o.Backend, o.Counters = NewMemory(1<<20, nil), store.NewMemory(nil)
			return New(o)
		},
		"redis": func(o Options) *Store {
			srv := redistest.Start(t)
			r, err := store.NewRedis(srv.URL(), time.Second)
			require.NoError(t, err)
			g := store.NewGuard(r, store.GuardOptions{Name: "redis", Metrics: metrics.New(), PingEvery: -1})
			t.Cleanup(func() { _ = g.Close() })
			o.Backend, o.Counters = g, g
			return New(o)
		},
	}
}

// TestStoreOwnership: a record is read and deleted by the key that saved it only; for
// another key it is not found, as an unknown id is, and stays there for its owner.
func TestStoreOwnership(t *testing.T) {
	t.Parallel()
	for name, newStore := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s := newStore(Options{TTL: time.Hour, MaxBytes: 1 << 20, KeyMaxBytes: 1 << 20})
			ctx := context.Background()
			want := record("key-a", 10)
			require.Empty(t, s.Save(ctx, "resp_1", want))
			got, err := s.Load(ctx, "key-a", "resp_1")
			require.NoError(t, err)
			assert.Equal(t, want, got)

			_, err = s.Load(ctx, "key-b", "resp_1")
			assert.ErrorIs(t, err, ErrNotFound, "another key's")
			assert.ErrorIs(t, s.Delete(ctx, "key-b", "resp_1"), ErrNotFound)
			_, err = s.Load(ctx, "key-a", "resp_2")
			assert.ErrorIs(t, err, ErrNotFound, "unknown")

			_, err = s.Load(ctx, "key-a", "resp_1")
			require.NoError(t, err, "still there for its owner")
			require.NoError(t, s.Delete(ctx, "key-a", "resp_1"))
			_, err = s.Load(ctx, "key-a", "resp_1")
			assert.ErrorIs(t, err, ErrNotFound, "deleted")
		})
	}
}

// TestStoreBounds: a record over MaxBytes is not stored, nor one past its key's bytes in
// a window, while another key still stores; KeyMaxBytes 0 stores nothing.
func TestStoreBounds(t *testing.T) {
	t.Parallel()
	for name, newStore := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s := newStore(Options{TTL: time.Hour, MaxBytes: 400, KeyMaxBytes: 500})
			ctx := context.Background()
			assert.Equal(t, NotStoredTooLarge, s.Save(ctx, "resp_big", record("key-a", 400)))
			_, err := s.Load(ctx, "key-a", "resp_big")
			assert.ErrorIs(t, err, ErrNotFound)

			assert.Empty(t, s.Save(ctx, "resp_1", record("key-a", 200)))
			assert.Empty(t, s.Save(ctx, "resp_2", record("key-a", 200)), "under the key's bytes before it")
			assert.Equal(t, NotStoredKeyLimit, s.Save(ctx, "resp_3", record("key-a", 10)))
			assert.Empty(t, s.Save(ctx, "resp_4", record("key-b", 10)), "another key's bytes are its own")

			off := newStore(Options{TTL: time.Hour, MaxBytes: 400})
			assert.Equal(t, NotStoredKeyLimit, off.Save(ctx, "resp_1", record("key-a", 1)))
		})
	}
}

// TestStoreUnavailable: a backend that does not answer stores nothing and says so, and a
// load is its error, not a not-found.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	r, err := store.NewRedis(redistest.StartSilent(t).URL(), 20*time.Millisecond)
	require.NoError(t, err)
	g := store.NewGuard(r, store.GuardOptions{Name: "redis", Metrics: metrics.New(), PingEvery: -1})
	t.Cleanup(func() { _ = g.Close() })
	s := New(Options{TTL: time.Hour, MaxBytes: 1 << 20, KeyMaxBytes: 1 << 20, Backend: g, Counters: g})
	assert.Equal(t, NotStoredUnavailable, s.Save(context.Background(), "resp_1", record("key-a", 1)))
	_, err = s.Load(context.Background(), "key-a", "resp_1")
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNotFound)
}

// TestMemoryBounds: values expire with their TTL, and beyond the bytes the least recently
// used go first; one larger than the bound is not kept.
func TestMemoryBounds(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	ctx := context.Background()
	m := NewMemory(3*(entryOverhead+2+100), clk.Now)
	v := []byte(strings.Repeat("v", 100))
	for _, k := range []string{"k1", "k2", "k3"} {
		require.NoError(t, m.Put(ctx, k, v, time.Hour))
	}
	_, ok, _ := m.Get(ctx, "k1") // k2 is now the least recently used
	require.True(t, ok)
	require.NoError(t, m.Put(ctx, "k4", v, time.Hour))
	_, ok, _ = m.Get(ctx, "k2")
	assert.False(t, ok, "dropped, least recently used")
	for _, k := range []string{"k1", "k3", "k4"} {
		_, ok, _ = m.Get(ctx, k)
		assert.True(t, ok, k)
	}

	require.ErrorIs(t, m.Put(ctx, "huge", make([]byte, 4*(entryOverhead+100)), time.Hour), ErrTooLarge)
	_, ok, _ = m.Get(ctx, "huge")
	assert.False(t, ok)
	_, ok, _ = m.Get(ctx, "k1")
	assert.True(t, ok, "a value over the bound drops nothing")

	clk.Advance(time.Hour)
	_, ok, _ = m.Get(ctx, "k1")
	assert.False(t, ok, "expired")
	assert.LessOrEqual(t, m.bytes, m.max)
}

// TestStoreOverMemory: a record larger than all the process may hold is not stored, and
// says so, rather than being dropped after it was said to be kept.
func TestStoreOverMemory(t *testing.T) {
	t.Parallel()
	s := New(Options{TTL: time.Hour, MaxBytes: 1 << 20, KeyMaxBytes: 1 << 20, Counters: store.NewMemory(nil), Backend: NewMemory(100, nil)})
	assert.Equal(t, NotStoredTooLarge, s.Save(context.Background(), "resp_1", record("key-a", 10)))
}
