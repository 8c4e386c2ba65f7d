package stream_test

import (
	"testing"
	"time"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/nirmata"
	"github.com/nirmata/llm-gateway/internal/stream"
)

// benchEvents is a typical 30-event stream: text in 12 deltas, then two tool calls of 6
// input fragments each, as the simulator and Bedrock send them.
func benchEvents() []bedrock.StreamEvent {
	evs := []bedrock.StreamEvent{evMessageStart()}
	for _, w := range []string{"I'll ", "save ", "the ", "policy ", "and ", "list ", "the ", "files ", "in ", "the ", "repo ", "now."} {
		evs = append(evs, evText(0, w))
	}
	evs = append(evs, evStop(0))
	for b, id := range []string{"tooluse_bench1", "tooluse_bench2"} {
		evs = append(evs, evToolStart(b+1, id, "save_policy"))
		for _, frag := range []string{`{"filen`, `ame":"p`, `olicy.y`, `aml","c`, `ontent"`, `:"x: 1"}`} {
			evs = append(evs, evToolInput(b+1, frag))
		}
		evs = append(evs, evStop(b+1))
	}
	return append(evs, evMessageStop("tool_use"), evMetadata(120, 30))
}

// BenchmarkMachine measures the whole per-event path of each format: the machine, then
// encoding every event it produces (JSONL as the server writes it, through the API's
// proto; chunked; machine_only is the machine alone).
func BenchmarkMachine(b *testing.B) {
	evs := benchEvents()
	formats := []struct {
		name string
		enc  func(dst []byte, c *nirmata.Chunker, e *chat.Event) []byte
	}{
		{"jsonl", func(dst []byte, _ *nirmata.Chunker, e *chat.Event) []byte { return nirmata.AppendLine(dst, e) }},
		{"chunked", func(dst []byte, c *nirmata.Chunker, e *chat.Event) []byte { return c.Append(dst, e) }},
		{"machine_only", func(dst []byte, _ *nirmata.Chunker, _ *chat.Event) []byte { return dst }},
	}
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			out := make([]chat.Event, 0, 8)
			buf := make([]byte, 0, 4096)
			one := func() {
				m := stream.NewMachine(nil)
				c := nirmata.NewChunker("req-0123456789")
				src := &sliceEvents{evs: evs}
				for {
					var err error
					out, err = m.Step(src, out[:0])
					for i := range out {
						buf = f.enc(buf[:0], c, &out[i])
					}
					if err != nil {
						break
					}
				}
			}
			allocs := testing.AllocsPerRun(100, one)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				one()
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(evs)), "ns/event")
			b.ReportMetric(allocs/float64(len(evs)), "allocs/event")
		})
	}
}
