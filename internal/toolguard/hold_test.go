// The race detector's instrumentation makes frames larger and goroutines deeper: stack
// sizes under it are not the ones this file's test holds the gateway to.

//go:build !race

package toolguard

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// TestHolderChecksApart: a stream's events pass through its Holder on the goroutine that
// relays them, whose stack keeps the size its deepest call needed for as long as the
// stream is open; the check of a whole call runs on a goroutine of its own, so a relay that
// passed a call holds no more stack than a goroutine starts with (it held 8 KiB when the
// check ran on it).
func TestHolderChecksApart(t *testing.T) {
	g := New(Options{}, zap.NewNop())
	model := capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0")
	req := &chat.Request{Tools: []chat.Tool{{Name: "get",
		Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`)}}}
	mode, err := g.Mode(req, "")
	require.NoError(t, err)
	hold := func() *Holder {
		c, _ := g.Check(req, model, mode, true, &translate.Plan{}, g.Budget())
		return c.Hold()
	}
	call := []chat.Event{
		{Kind: chat.EventToolCall, ToolCall: chat.ToolCall{ID: "t1", Name: "get"}},
		{Kind: chat.EventToolCall, ToolCall: chat.ToolCall{Arguments: `{"q":"pods","n":3}`}},
		{Kind: chat.EventToolCallEnd},
	}
	require.Len(t, hold().Pass(call, nil), 3, "the call goes out, checked (and its schema compiled)")

	// n relays each pass a call through a Holder of their own, one after another (what a
	// check needed apart is freed before the next), and wait, as relays of open streams do.
	const n = 500
	holders := make([]*Holder, n)
	for i := range holders {
		holders[i] = hold()
	}
	var before, after runtime.MemStats
	runtime.GC() // sets the size goroutines start with
	start := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	metrics.Read(start)
	// No collection while the relays wait: it would shrink their stacks, which they use
	// little of while they wait.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.ReadMemStats(&before)
	release := make(chan struct{})
	var relays sync.WaitGroup
	for _, h := range holders {
		passed := make(chan struct{})
		relays.Go(func() {
			h.Pass(call, nil)
			close(passed)
			<-release
		})
		<-passed
	}
	runtime.ReadMemStats(&after)
	close(release)
	relays.Wait()
	perRelay, startSize := float64(after.StackInuse-before.StackInuse)/n, start[0].Value.Uint64()
	t.Logf("stack per relay after a call: %.0f bytes; goroutines start with %d", perRelay, startSize)
	assert.Less(t, perRelay, float64(startSize+2<<10), "the relays' stacks did not grow")
}
