package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clocktest"
)

// TestParallelMemory: a client learned is known to the replica that learned it and, through
// the store, to another; while the store fails, each replica knows what it learned itself;
// a request that decides its parallel calls, or offers no tools, is never one the memory
// answers; nothing is known once the TTL has passed.
func TestParallelMemory(t *testing.T) {
	t.Parallel()
	values := newSharedValues()
	clk := clocktest.New(time.Unix(1e9, 0))
	one := newParallelMemory(time.Hour, clk.Now, values, zap.NewNop(), nil)
	two := newParallelMemory(time.Hour, clk.Now, values, zap.NewNop(), nil)
	tools := []chat.Tool{{Name: "a"}}
	agent := &chat.Request{KeyID: "ci", UserAgent: "gollm", Tools: tools}
	other := &chat.Request{KeyID: "ci", UserAgent: "curl", Tools: tools}

	assert.False(t, one.knows(t.Context(), agent))
	one.learn(t.Context(), agent)
	assert.True(t, one.knows(t.Context(), agent))
	assert.True(t, two.knows(t.Context(), agent), "through the store")
	assert.False(t, two.knows(t.Context(), other))
	assert.False(t, one.knows(t.Context(), &chat.Request{KeyID: "ci", UserAgent: "gollm"}), "no tools, no calls")
	assert.False(t, one.knows(t.Context(), &chat.Request{KeyID: "ci", UserAgent: "gollm", Tools: tools, ParallelToolCalls: new(true)}))

	values.mu.Lock()
	values.broken = true
	values.mu.Unlock()
	assert.True(t, one.knows(t.Context(), agent), "what a replica learned stays known while the store fails")
	assert.False(t, two.knows(t.Context(), agent))
	two.learn(t.Context(), other)
	assert.True(t, two.knows(t.Context(), other))

	clk.Advance(time.Hour)
	assert.False(t, one.knows(t.Context(), agent), "forgotten after the TTL")

	off := newParallelMemory(0, clk.Now, values, zap.NewNop(), nil)
	off.learn(t.Context(), agent)
	assert.False(t, off.knows(t.Context(), agent), "a TTL of 0 remembers nothing")
}

// TestParallelMemoryIsBounded: a process remembers at most maxRememberedClients clients,
// the newest kept.
func TestParallelMemoryIsBounded(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Unix(1e9, 0))
	m := newParallelMemory(time.Hour, clk.Now, nil, zap.NewNop(), nil)
	tools := []chat.Tool{{Name: "a"}}
	for i := range maxRememberedClients + 10 {
		m.learn(t.Context(), &chat.Request{UserAgent: strconv.Itoa(i), Tools: tools})
	}
	assert.Len(t, m.until, maxRememberedClients)
	assert.True(t, m.knows(t.Context(), &chat.Request{UserAgent: strconv.Itoa(maxRememberedClients + 9), Tools: tools}))
}
