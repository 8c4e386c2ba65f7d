package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/loadtest"
)

// TestLoadScenarios runs the benchmark's gateway scenarios (scripts/bench-e2e.sh) against
// the gateway on the simulator: each surface accepts its scenario's body, and the load
// generator's readers find the answers complete, with the expected tool calls, in each
// surface's shape. With an upstream failure mid-stream, each stream surface's answer counts
// as a stream error, not as a fast success.
func TestLoadScenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario, fault string
		want            loadtest.Kind
	}{
		{"unary", "", loadtest.OK},
		{"stream", "", loadtest.OK},
		{"openai-unary", "", loadtest.OK},
		{"openai-stream", "", loadtest.OK},
		{"stream", "stream_exception,after=5", loadtest.StreamError},
		{"openai-stream", "stream_exception,after=5", loadtest.StreamError},
		{"openai-stream", "truncate,after=5", loadtest.StreamError},
		{"anthropic-unary", "", loadtest.OK},
		{"anthropic-stream", "", loadtest.OK},
		{"anthropic-stream", "stream_exception,after=5", loadtest.StreamError},
	}
	for _, tt := range tests {
		t.Run(tt.scenario+" "+tt.fault, func(t *testing.T) {
			var faults []string
			if tt.fault != "" {
				faults = append(faults, tt.fault)
			}
			g := simGateway(t, faults...)
			sc, err := loadtest.Lookup(tt.scenario, loadtest.DefaultModel)
			require.NoError(t, err)
			client := loadtest.NewClient(2, 10*time.Second)
			t.Cleanup(client.CloseIdleConnections)
			res := loadtest.NewRunner(loadtest.Config{
				Client: client, URL: "http://" + g.HTTP + sc.Path, Body: sc.Body, Format: sc.Format, Expect: sc.Expect, Usage: sc.Usage,
				Header: http.Header{"Authorization": {"Bearer " + testKey}}, Concurrency: 2, Requests: 4,
			}).Run(t.Context())
			assert.Equal(t, 4, res.Counts[tt.want], "counts %v statuses %v", res.Counts, res.Statuses)
			if tt.want == loadtest.OK && sc.Format.Streams() {
				// Text comes in deltas; each call whole, as tool_validation report (the
				// default) holds it until it is checked: a header and one arguments line.
				assert.GreaterOrEqual(t, res.Lines/4, int64(10), "a stream of two tool calls has more lines than that")
			}
		})
	}
}
