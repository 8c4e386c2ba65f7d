package parallel

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
	"github.com/nirmata/llm-gateway/internal/store/storetest"
)

// TestMemory: a client learned is known to the replica that learned it and, through the
// store, to another; while the store fails, each replica knows what it learned itself; a
// request that decides its parallel calls, or offers no tools, is never one the memory
// answers; nothing is known once the TTL has passed.
func TestMemory(t *testing.T) {
	t.Parallel()
	values := storetest.New()
	clk := clocktest.New(time.Unix(1e9, 0))
	opts := Options{TTL: time.Hour, Shared: values, Now: clk.Now}
	one, two := New(opts, zap.NewNop()), New(opts, zap.NewNop())
	tools := []chat.Tool{{Name: "a"}}
	agent := &chat.Request{KeyID: "ci", UserAgent: "gollm", Tools: tools}
	other := &chat.Request{KeyID: "ci", UserAgent: "curl", Tools: tools}

	assert.False(t, one.Knows(t.Context(), agent))
	one.Learn(t.Context(), agent)
	assert.True(t, one.Knows(t.Context(), agent))
	assert.True(t, two.Knows(t.Context(), agent), "through the store")
	assert.False(t, two.Knows(t.Context(), other))
	assert.False(t, one.Knows(t.Context(), &chat.Request{KeyID: "ci", UserAgent: "gollm"}), "no tools, no calls")
	assert.False(t, one.Knows(t.Context(), &chat.Request{KeyID: "ci", UserAgent: "gollm", Tools: tools, ParallelToolCalls: new(true)}))

	values.Broken = true
	assert.True(t, one.Knows(t.Context(), agent), "what a replica learned stays known while the store fails")
	assert.False(t, two.Knows(t.Context(), agent))
	two.Learn(t.Context(), other)
	assert.True(t, two.Knows(t.Context(), other))

	clk.Advance(time.Hour)
	assert.False(t, one.Knows(t.Context(), agent), "forgotten after the TTL")

	off := New(Options{Shared: values, Now: clk.Now}, zap.NewNop())
	off.Learn(t.Context(), agent)
	assert.False(t, off.Knows(t.Context(), agent), "a TTL of 0 remembers nothing")
}

// TestMemoryIsBounded: a process remembers at most maxClients clients, the newest kept.
func TestMemoryIsBounded(t *testing.T) {
	t.Parallel()
	m := New(Options{TTL: time.Hour}, zap.NewNop())
	tools := []chat.Tool{{Name: "a"}}
	for i := range maxClients + 10 {
		m.Learn(t.Context(), &chat.Request{UserAgent: strconv.Itoa(i), Tools: tools})
	}
	assert.Len(t, m.until, maxClients)
	assert.True(t, m.Knows(t.Context(), &chat.Request{UserAgent: strconv.Itoa(maxClients + 9), Tools: tools}))
}
