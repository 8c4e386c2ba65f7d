package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/gateway"
)

// auditedCall serves one OpenAI call on a gateway on the simulator whose audit trail is
// full in the embedded store at dsn, then stops the gateway, which writes its records. It
// returns the call's request id.
func auditedCall(t *testing.T, dsn string) string {
	t.Helper()
	g, stop := auditedGateway(t, dsn)

	body := `{"model":"us.anthropic.claude-sonnet-4-20250514-v1:0","messages":[{"role":"user","content":"Say hello"}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.Addrs().HTTP+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	id := resp.Header.Get("X-Request-Id")
	require.NotEmpty(t, id)

	require.NoError(t, stop()) // the drain writes what the audit writer holds
	return id
}

// auditedGateway serves a gateway on the simulator whose audit trail is full in the
// embedded store at dsn, with the admin API on a free port under adminKey, until stop.
func auditedGateway(t *testing.T, dsn string) (g *gateway.Gateway, stop func() error) {
	t.Helper()
	cfg, err := config.Load([]string{"--sim", "--audit", "full", "--audit-dsn", dsn, "--admin-keys", adminKey,
		"--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, func(string) string { return "" })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	g, err = gateway.New(ctx, cfg, zap.NewNop())
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-served
	}
	t.Cleanup(func() { _ = stop() })
	return g, stop
}

const adminKey = "admin-key-0123456789"

// TestUsageThroughTheAdminAPI: while a gateway holds the embedded store, gateway usage
// reads it through the admin API, and says what to do when asked to open the file itself.
func TestUsageThroughTheAdminAPI(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "audit.db")
	auditedCall(t, dsn)
	g, _ := auditedGateway(t, dsn)

	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"usage", "--admin-url", "http://" + g.Addrs().Admin, "--admin-key", adminKey, "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Regexp(t, `^\{"rows":\[\{"key":"","model":"","day":"","requests":1,"input_tokens":\d+,"output_tokens":\d+,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0\.\d+\}\]\}$`, stdout.String())

	stdout.Reset()
	code = run(t.Context(), []string{"usage", "--admin-url", "http://" + g.Addrs().Admin, "--admin-key", "not-the-admin-key-0123"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "the admin API answered 401: missing or unknown admin key")

	stderr.Reset()
	code = run(t.Context(), []string{"usage", "--audit-dsn", dsn}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "in use by another process")
}

// TestUsageAndReplay: gateway usage reads the embedded store a stopped gateway wrote and
// prints the totals by key and model; gateway replay re-runs the recorded call on another
// model on the simulator and prints both side by side, with their tokens and cost.
func TestUsageAndReplay(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "audit.db")
	id := auditedCall(t, dsn)

	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"usage", "--audit-dsn", dsn, "--group-by", "model,key"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 3, stdout.String()) // the heading, the model's row, the total
	assert.Equal(t, []string{"KEY", "MODEL", "REQUESTS", "INPUT", "OUTPUT", "CACHE", "READ", "CACHE", "WRITE", "COST", "USD"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	assert.Equal(t, []string{"-", "us.anthropic.claude-sonnet-4-20250514-v1:0", "1"}, row[:3])
	assert.NotEqual(t, "0.000000", row[len(row)-1], "the call has a cost")
	assert.Equal(t, "total", strings.Fields(lines[2])[0])

	stdout.Reset()
	code = run(t.Context(), []string{"replay", id, "--model", "us.amazon.nova-pro-v1:0", "--sim", "--audit-dsn", dsn}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "request "+id)
	assert.Regexp(t, `model\s+us\.anthropic\.claude-sonnet-4-20250514-v1:0\s+us\.amazon\.nova-pro-v1:0`, out)
	assert.Regexp(t, `cost USD\s+0\.\d{6}\s+0\.\d{6}`, out)
	assert.Regexp(t, `recorded answer\s+\| replay answer`, out)

	code = run(t.Context(), []string{"replay", "0000000000000000", "--model", "x", "--sim", "--audit-dsn", dsn}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "no call has that request id")
}
