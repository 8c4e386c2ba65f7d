package core

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// TestOpenStreamsLetTheirRequestGo: once a stream is open, the request and its translation
// have served; a stream holds nothing of them for as long as it stays open, neither its
// messages nor its tools' descriptions (an agent's run to tens of kilobytes each request).
func TestOpenStreamsLetTheirRequestGo(t *testing.T) {
	const streams, big = 40, 64 << 10
	s := New(textUpstream{"On it."}, Options{DefaultModel: model, MaxTools: 8, MaxMessages: 8, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: streams}, zap.NewNop())
	heap := func() int64 { // signed: a collection may leave less than before
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := heap()
	open := make([]*Stream, streams)
	for i := range open {
		req := &chat.Request{ID: "r1", Messages: []chat.Message{{Role: chat.RoleUser, Content: strings.Repeat("m", big)}},
			Tools: []chat.Tool{{Name: "get", Description: strings.Repeat("d", big), Parameters: []byte(`{"type":"object"}`)}}}
		st, _, err := s.Stream(t.Context(), req)
		require.NoError(t, err)
		open[i] = st
	}
	perStream := (heap() - before) / streams
	for _, st := range open {
		require.NoError(t, st.Close())
	}
	assert.Less(t, perStream, int64(big/4), "bytes an open stream holds of a request with a %d-byte message and tool description", big)
}
