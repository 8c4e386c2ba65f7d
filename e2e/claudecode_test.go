//go:build clients

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/config"
)

// Claude Code (npm @anthropic-ai/claude-code, pinned in test/node/package-lock.json) is a
// native program: npm installs the one for this platform as an optional dependency,
// @anthropic-ai/claude-code-<platform>, and the package's postinstall script copies it over
// the placeholder bin/claude.exe. make clients installs with --ignore-scripts, as for every
// package of test/node, so the tests run the platform package's program itself.

// claudeTimeout bounds one `claude -p` run; on a gateway that answers at once it takes a
// second or two.
const claudeTimeout = 2 * time.Minute

// requireClaude finds the installed Claude Code program, or fails (requireNative).
func requireClaude(t *testing.T) string {
	return requireNative(t, "Claude Code", "@anthropic-ai/claude-code-*/claude")
}

// requireNative finds the one program of a pinned client for this platform under test/node's
// node_modules (glob, below it), or fails: CI installs it, and a test that skipped would
// hide that it never ran.
func requireNative(t *testing.T, client, glob string) string {
	t.Helper()
	dir, err := filepath.Abs(nodeDir)
	require.NoError(t, err)
	found, err := filepath.Glob(filepath.Join(dir, "node_modules", glob))
	require.NoError(t, err)
	if len(found) != 1 {
		t.Fatalf("want the one %s program of this platform at %s/node_modules/%s, found %q: run `make clients`, which installs test/node's packages (npm ci installs the platform's optional dependency)", client, dir, glob, found)
	}
	return found[0]
}

// claudeRun is one `claude -p` run: its own HOME (so its settings, sessions and --continue
// history are the test's) and working directory, against one base URL.
type claudeRun struct {
	bin  string
	home string // HOME and CLAUDE_CONFIG_DIR's parent
	dir  string // the working directory: where its Bash tool runs commands
	url  string // ANTHROPIC_BASE_URL
	key  string
	// keyVar carries key: ANTHROPIC_API_KEY (sent as x-api-key) or ANTHROPIC_AUTH_TOKEN
	// (Authorization: Bearer).
	keyVar string
}

// newClaudeRun makes a HOME and a working directory for runs of bin against url. The
// working directory is a new git repository, as where Claude Code is mostly run: it looks
// for .git in the directory and above, and sends the repository's status when it finds one,
// so that a stray /tmp/.git cannot change what it sends.
func newClaudeRun(t *testing.T, bin, url, key string) claudeRun {
	t.Helper()
	c := claudeRun{bin: bin, home: t.TempDir(), dir: t.TempDir(), url: url, key: key, keyVar: "ANTHROPIC_API_KEY"}
	out, err := exec.CommandContext(t.Context(), "git", "init", "-q", "-b", "main", c.dir).CombinedOutput()
	require.NoError(t, err, "git init: %s", out)
	return c
}

// run runs `claude` with args and returns what it printed. The environment is built from
// nothing but PATH, so no ANTHROPIC_* or proxy variable of the machine reaches it, and it
// sends nothing but its requests to the base URL: no telemetry, error reports, update
// checks or other non-essential traffic, which would wait on a network this machine does
// not have.
func (c claudeRun) run(ctx context.Context, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, claudeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + c.home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(c.home, ".claude"),
		"ANTHROPIC_BASE_URL=" + c.url,
		c.keyVar + "=" + c.key,
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}, env...)
	cmd.WaitDelay = 5 * time.Second // a child that keeps the pipes open cannot hang the test
	return cmd.CombinedOutput()
}

// TestClaudeCodeThroughGateway runs the pinned Claude Code, unmodified, through the
// gateway's Messages API on the simulator: a tool task whose Bash call runs a real command in
// a temporary directory, then a second turn by --continue whose command needs the first's
// file, so the whole history (with thinking on, its signed blocks, which the simulator
// checks) goes back through the gateway. On Claude Code's default model (claude-opus-5-5:
// adaptive thinking, effort, a role-system message, eight betas), on a Claude model by
// Anthropic's own name with thinking on (Claude Code asks for a budget on
// claude-sonnet-4-5), and on a model that is not Claude, through an alias: there the gateway
// drops thinking, cache points and the betas. The key goes as x-api-key
// (ANTHROPIC_API_KEY), and on Sonnet as a bearer token (ANTHROPIC_AUTH_TOKEN). No request may
// reach Bedrock invalid.
func TestClaudeCodeThroughGateway(t *testing.T) {
	t.Parallel()
	bin := requireClaude(t)
	for _, tc := range []struct {
		name   string
		args   []string // the model, as claude -p takes it
		model  string   // what Claude Code sends
		keyVar string
	}{
		{"default", nil, "claude-opus-5-5", "ANTHROPIC_API_KEY"},
		{"claude-sonnet-4-5", []string{"--model", "claude-sonnet-4-5"}, "claude-sonnet-4-5", "ANTHROPIC_AUTH_TOKEN"},
		{"nova-pro", []string{"--model", "nova-pro"}, "nova-pro", "ANTHROPIC_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig(t)
			cfg.Sim.Enabled = true
			cfg.ModelAliases = map[string][]config.Target{"nova-pro": {{ModelID: "us.amazon.nova-pro-v1:0"}}}
			g := start(t, cfg)
			c := newClaudeRun(t, bin, "http://"+g.HTTP, testKey)
			c.keyVar = tc.keyVar

			out, err := c.run(t.Context(), nil, append([]string{"-p", "Use the Bash tool to run `echo first > notes.txt`", "--allowedTools", "Bash"}, tc.args...)...)
			require.NoError(t, err, "claude -p: %s", out)
			t.Logf("turn 1: %s", out)
			assert.Contains(t, string(out), "Tool results received: Bash", "the answer after the tool result")
			notes, err := os.ReadFile(filepath.Join(c.dir, "notes.txt"))
			require.NoError(t, err, "the Bash call ran")
			assert.Equal(t, "first\n", string(notes))

			out, err = c.run(t.Context(), nil, append([]string{"-p", "--continue", "Now use the Bash tool to run `mv notes.txt done.txt`", "--allowedTools", "Bash"}, tc.args...)...)
			require.NoError(t, err, "claude -p --continue: %s", out)
			t.Logf("turn 2: %s", out)
			done, err := os.ReadFile(filepath.Join(c.dir, "done.txt"))
			require.NoError(t, err, "the second turn's Bash call ran on the first turn's file")
			assert.Equal(t, "first\n", string(done))
			assert.NoFileExists(t, filepath.Join(c.dir, "notes.txt"))

			// Two requests a turn (the call, the answer after its result), every one answered.
			var calls, lines int
			for _, e := range g.logs.FilterMessage("http").AllUntimed() {
				m := e.ContextMap()
				if m["route"] != "/v1/messages" {
					continue
				}
				lines++
				assert.Equal(t, "ok", m["code"], "access line %v", m)
				assert.Equal(t, tc.model, m["request_model"], "access line %v", m)
				n, _ := m["tool_calls"].(int)
				calls += n
			}
			assert.Equal(t, 4, lines, "requests to /v1/messages")
			assert.Equal(t, 2, calls, "tool calls answered")
			assert.Zero(t, metricValue(t, g, "gateway_upstream_errors_total", nil), "a Bedrock error")
		})
	}
}

// TestClaudeCodeOnEveryClaudeModel runs the pinned Claude Code's default request, a tool
// task, on every Claude model of the gateway's table of Anthropic names (BEDROCK.md L), by
// the name Claude Code is given: whatever Claude Code sends for each (its thinking form, its
// betas, its max_tokens), the gateway answers, and no request reaches Bedrock invalid. Claude
// Code sends claude-opus-5-5 for the older Opus names unless told not to remap them
// (CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP), which this test tells it, so that each model is
// the one named.
func TestClaudeCodeOnEveryClaudeModel(t *testing.T) {
	t.Parallel()
	bin := requireClaude(t)
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	t.Cleanup(func() {
		assert.Zero(t, metricValue(t, g, "gateway_upstream_errors_total", nil), "a Bedrock error")
	})
	for _, row := range capabilities.AnthropicNames() {
		name := row.Names[0]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClaudeRun(t, bin, "http://"+g.HTTP, testKey)
			out, err := c.run(t.Context(), []string{"CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP=1"}, "-p", "Use the Bash tool to run `echo ok > ran.txt`", "--allowedTools", "Bash", "--model", name)
			require.NoError(t, err, "claude -p --model %s: %s", name, out)
			assert.FileExists(t, filepath.Join(c.dir, "ran.txt"), "the Bash call ran")
			assert.Contains(t, string(out), "Tool results received: Bash")
		})
	}
}
