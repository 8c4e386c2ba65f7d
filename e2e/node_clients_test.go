//go:build clients

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeDir holds the scripts that run the official openai npm client and the Vercel AI SDK
// against a gateway (docs/PROTOCOL.md 10: both MUST work unmodified), the OpenAI Agents SDK
// (16) and the Anthropic SDK (15), with their packages, and Codex CLI's and Claude Code's
// (codex*_test.go, claudecode*_test.go), pinned in its package-lock.json. Real client
// programs, so under the clients build tag:
// make clients installs the packages and runs them.
const nodeDir = "../test/node"

// minNodeMajor is the oldest Node.js the pinned packages support.
const minNodeMajor = 20

// nodeScriptTimeout bounds one script; they take a few seconds.
const nodeScriptTimeout = 2 * time.Minute

// requireNode finds node and the installed packages, or fails: CI has both, and a test
// that skipped would hide that the npm clients were never run.
func requireNode(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(nodeDir)
	require.NoError(t, err)
	node, err = exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: install Node.js %d or later and npm, then run `make clients` (it installs the packages of test/node): %v", minNodeMajor, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("%s/node_modules is missing: run `make clients`, which installs them (npm ci --prefix test/node): %v", dir, err)
	}
	out, err := exec.CommandContext(t.Context(), node, "-p", "process.versions.node").Output()
	require.NoError(t, err, "node -p process.versions.node")
	version := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.Split(version, ".")[0])
	if major < minNodeMajor {
		t.Fatalf("node %s is too old: the packages of test/node need Node.js %d or later", version, minNodeMajor)
	}
	return node, dir
}

// nodeRun is how one script's run ended.
type nodeRun struct {
	out  []byte
	err  error
	took time.Duration
}

// runNode runs one script of test/node against the gateway g.
func runNode(ctx context.Context, node, dir, script string, g started) nodeRun {
	ctx, cancel := context.WithTimeout(ctx, nodeScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GATEWAY_BASE_URL=http://"+g.HTTP+"/v1",
		"GATEWAY_API_KEY="+testKey,
		"GATEWAY_MODEL="+testModel,
	)
	cmd.WaitDelay = 5 * time.Second // a child that keeps the pipes open cannot hang the test
	begin := time.Now()
	out, err := cmd.CombinedOutput()
	return nodeRun{out: out, err: err, took: time.Since(begin).Round(time.Millisecond)}
}

// TestNodeClients runs the official openai npm client and the Vercel AI SDK's
// OpenAI-compatible provider, unmodified, against gateways on the simulator: each script
// gets its own gateway, and they run in parallel.
func TestNodeClients(t *testing.T) {
	t.Parallel()
	node, dir := requireNode(t)
	tests := []struct {
		script string
		faults []string // sim_faults, in the order the script meets them
		after  func(t *testing.T, g started)
	}{
		{script: "openai.mjs"},
		{script: "ai-sdk.mjs"},
		{
			script: "anthropic.mjs",
			after: func(t *testing.T, g started) {
				// Every call reached the Messages surface, and none reached Bedrock invalid.
				assert.Positive(t, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "anthropic", "code": "ok"}))
				assert.Zero(t, metricValue(t, g, "gateway_upstream_errors_total", nil), "a Bedrock error")
			},
		},
		{
			script: "openai-faults.mjs",
			faults: []string{
				"stream_exception,exception=modelStreamErrorException,times=1",
				"truncate,times=1",
				"model_not_ready,times=1,mode=stream",
				"model_not_ready,times=1,mode=unary",
			},
			after: func(t *testing.T, g started) {
				// The two 429s were the gateway's answers, not retried by it: the SDK retried
				// each (the script counted its requests), and the retries succeeded.
				openai := map[string]string{"transport": "openai", "code": "resource_exhausted"}
				require.Eventually(t, func() bool {
					return metricValue(t, g, "gateway_requests_total", openai) == 2
				}, 5*time.Second, 10*time.Millisecond, "two 429s answered")
				for _, route := range []string{"chat", "chat_stream"} {
					assert.EqualValues(t, 1, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "openai", "route": route, "code": "resource_exhausted"}), route)
				}
				assert.EqualValues(t, 2, metricValue(t, g, "gateway_upstream_errors_total", map[string]string{"error_code": "ModelNotReadyException"}))
				assert.Zero(t, metricValue(t, g, "gateway_upstream_retries_total", nil), "the gateway does not retry ModelNotReady itself")
				assert.EqualValues(t, 1, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "openai", "route": "chat", "code": "ok"}))
			},
		},
	}
	// A script added to test/node is run here, or this fails.
	scripts, err := filepath.Glob(filepath.Join(dir, "*.mjs"))
	require.NoError(t, err)
	var listed []string
	for _, tt := range tests {
		listed = append(listed, tt.script)
	}
	for _, s := range scripts {
		// lib.mjs is the scripts' library; TestAgentsSDK runs agents.mjs.
		if name := filepath.Base(s); name != "lib.mjs" && name != "agents.mjs" {
			assert.Contains(t, listed, name, "a script of test/node that TestNodeClients does not run")
		}
	}

	// Every script runs at once, each on its own gateway: most of their time is spent
	// waiting (node starting, the SDK's Retry-After), and parallel subtests would run only
	// GOMAXPROCS of them at a time. The subtests report each script's outcome.
	gateways := make([]started, len(tests))
	runs := make([]chan nodeRun, len(tests))
	for i, tt := range tests {
		cfg := defaultConfig(t)
		cfg.Sim.Enabled = true
		cfg.Sim.Faults = tt.faults
		gateways[i] = start(t, cfg)
		runs[i] = make(chan nodeRun, 1)
		go func() { runs[i] <- runNode(t.Context(), node, dir, tt.script, gateways[i]) }()
	}
	for i, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			r := <-runs[i]
			if r.err != nil {
				t.Fatalf("node %s: %v (after %v); its output:\n%s", tt.script, r.err, r.took, r.out)
			}
			t.Logf("node %s (%v):\n%s", tt.script, r.took, r.out)
			if tt.after != nil {
				tt.after(t, gateways[i])
			}
		})
	}
}
