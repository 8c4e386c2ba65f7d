// The race detector's instrumentation makes frames larger and goroutines deeper: stack
// sizes under it are not the ones this file's test holds the gateway to.

//go:build !race

package responses

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// TestStreamEncodesItemsApart: a stream's events are encoded on the goroutine that relays
// them, whose stack keeps the size its deepest call needed for as long as the stream is
// open; the events that carry a whole output item, content part or response are encoded on
// a goroutine of their own, so a relay that closes a message and passes a call, encoding
// them as deep as a relay does, keeps the stack of one that passes text (8 KiB; it went to
// 16 KiB when they were encoded on it).
func TestStreamEncodesItemsApart(t *testing.T) {
	c := testCall(t, "")
	text := []chat.Event{{Kind: chat.EventContent, Text: "Looking "}, {Kind: chat.EventContent, Text: "at the pods."}}
	call := []chat.Event{
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{ID: "tooluse_a", Name: "save"}},
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `{"f":1}`}},
		{Kind: chat.EventToolCallEnd, Index: 0},
	}
	stream(t, c, append(text, call...)) // the encoder's arshalers are made once
	textStacks, callStacks := relayStacks(c, text), relayStacks(c, call)
	t.Logf("stack per relay: %.0f bytes after text, %.0f after a call", textStacks, callStacks)
	assert.LessOrEqual(t, callStacks, textStacks+1<<10, "a relay that passed a call keeps the stack of one that passed text")
}

// relayStacks is the stack each of 500 relays holds once it has encoded events, at a
// relay's depth, with a streamer of its own whose message was opened before, and waits,
// as relays of open streams do. They encode one after another: what an item needed apart
// is freed before the next.
func relayStacks(c *call, events []chat.Event) float64 {
	const n = 500
	streamers := make([]*streamer, n)
	for i := range streamers {
		streamers[i] = c.streamer(testHead, "")
		streamers[i].appendEvent(nil, &chat.Event{Kind: chat.EventContent, Text: "Sure."})
	}
	var before, after runtime.MemStats
	runtime.GC()
	// No collection while the relays wait: it would shrink their stacks, which they use
	// little of while they wait.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.ReadMemStats(&before)
	release := make(chan struct{})
	var relays sync.WaitGroup
	for _, s := range streamers {
		encoded := make(chan struct{})
		relays.Go(func() {
			atRelayDepth(func() {
				var b []byte
				for i := range events {
					b = s.appendEvent(b[:0], &events[i])
				}
			})
			close(encoded)
			<-release
		})
		<-encoded
	}
	runtime.ReadMemStats(&after)
	close(release)
	relays.Wait()
	return float64(after.StackInuse-before.StackInuse) / n
}

// atRelayDepth calls f with about 3 KiB of stack in use, as deep as a relay encodes a
// stream's events: under net/http's connection, the server's middleware and httpx.Serve.
func atRelayDepth(f func()) { below(10, f) }

// below calls f under n frames of 256 bytes of its own.
//
//go:noinline
func below(n int, f func()) byte {
	var pad [256]byte
	if n == 0 {
		f()
		return pad[0]
	}
	pad[n] = byte(n)
	return below(n-1, f) + pad[n]
}
