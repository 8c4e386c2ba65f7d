package metrics

import (
	"testing"
	"time"
)

// BenchmarkRequest is the per-request hot path: labels already admitted.
func BenchmarkRequest(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.Request(TransportREST, RouteChat, "ok", model1, client, 1234*time.Millisecond)
	}
}

// BenchmarkRequestParallel is the same under contention on the label guards and series.
func BenchmarkRequestParallel(b *testing.B) {
	m := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request(TransportREST, RouteChat, "ok", model1, client, 1234*time.Millisecond)
		}
	})
}

// BenchmarkRequestOverflow is a client cycling through new client types after the cap:
// every call takes the slow path of the guard and lands in "other".
func BenchmarkRequestOverflow(b *testing.B) {
	m := New()
	names := make([]string, 1024)
	for i := range names {
		names[i] = "client-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	for _, n := range names[:MaxClientTypes] {
		m.Request(TransportREST, RouteChat, "ok", model1, n, time.Millisecond)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Request(TransportREST, RouteChat, "ok", model1, names[MaxClientTypes+i%(len(names)-MaxClientTypes)], time.Millisecond)
		i++
	}
}

func BenchmarkStreamOpened(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.StreamOpened(client)()
	}
}
