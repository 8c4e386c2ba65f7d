package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claudeCodeFixtures holds, per scenario, the requests the pinned Claude Code sends
// (README.md there says what they show; TestClaudeCodeRequests records them).
const claudeCodeFixtures = "testdata/claude-code"

// captured is one request as the capture server received it, secrets and the run's
// temporary paths replaced.
type captured struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    jsontext.Value    `json:"body"`
}

// readCaptured reads a fixture file of testdata/claude-code.
func readCaptured(t *testing.T, file string) []captured {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var reqs []captured
	require.NoError(t, json.Unmarshal(data, &reqs), file)
	return reqs
}

// TestClaudeCodeFixturesThroughGateway sends the first request of each conversation the
// pinned Claude Code was recorded in (its default model, claude-sonnet-4-5, the sonnet and
// haiku choices, claude-3-5-haiku-latest), headers and body as recorded, to the gateway on
// the simulator: each is answered in full and none reaches Bedrock invalid. The later
// requests replay thinking blocks that the capture server signed, which Bedrock would refuse;
// TestClaudeCodeThroughGateway (make clients) sends those from the real Claude Code.
func TestClaudeCodeFixturesThroughGateway(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	files, err := filepath.Glob(filepath.Join(claudeCodeFixtures, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	sent := 0
	for _, file := range files {
		for i, r := range readCaptured(t, file) {
			var body struct {
				Model    string   `json:"model"`
				Messages []roleOf `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &body))
			if slices.ContainsFunc(body.Messages, func(m roleOf) bool { return m.Role == "assistant" }) {
				continue
			}
			sent++
			t.Run(filepath.Base(file)+"/"+body.Model, func(t *testing.T) {
				req, err := http.NewRequestWithContext(t.Context(), r.Method, "http://"+g.HTTP+r.Path, bytes.NewReader(r.Body))
				require.NoError(t, err)
				for name, v := range r.Headers {
					switch name {
					case "Host", "Content-Length", "Connection", "Accept-Encoding":
					case "X-Api-Key":
						req.Header.Set(name, testKey)
					default:
						req.Header.Set(name, v)
					}
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				answer, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d of %s: %s", i, file, answer)
				assert.Equal(t, "text/event-stream", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
				assert.Contains(t, string(answer), "event: message_stop", "the stream ran to its end")
				assert.NotContains(t, string(answer), "event: error")
			})
		}
	}
	assert.GreaterOrEqual(t, sent, 5, "first requests replayed")
	assert.Zero(t, metricValue(t, g, "gateway_upstream_errors_total", nil), "a Bedrock error")
}

// roleOf is a message's role.
type roleOf struct {
	Role string `json:"role"`
}
