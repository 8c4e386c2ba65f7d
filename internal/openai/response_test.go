package openai

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestAppendStreamGolden: the benchmark's stream (streamEvents), with and without usage,
// encodes to the chunks in testdata, byte for byte: the chunker reuses its chunk from one
// event to the next, and nothing of one chunk may show in the next. After a deliberate
// change of the format, rewrite them with go test -run TestAppendStreamGolden -update.
func TestAppendStreamGolden(t *testing.T) {
	for _, tt := range []struct {
		file         string
		includeUsage bool
	}{{"testdata/bench_stream.sse", false}, {"testdata/bench_stream_usage.sse", true}} {
		ch := newChunker(benchHead, tt.includeUsage)
		var got []byte
		for i := range streamEvents {
			got = ch.appendEvent(got, &streamEvents[i])
		}
		if *update {
			require.NoError(t, os.WriteFile(tt.file, got, 0o644))
			continue
		}
		want, err := os.ReadFile(tt.file)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), tt.file)
	}
}
