//go:build clients

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/config"
)

// Codex CLI (npm @openai/codex, pinned in test/node/package-lock.json) is a native program:
// npm installs the one for this platform as an optional dependency,
// @openai/codex-<platform> (an alias of @openai/codex@<version>-<platform>), and
// bin/codex.js only finds and starts it. The tests run the platform package's program
// itself, without node in between.

// codexTimeout bounds one `codex exec` run; on a gateway that answers at once it takes a few
// seconds (the sandbox and the shell start).
const codexTimeout = 2 * time.Minute

// requireCodex finds the installed Codex program, or fails (requireNative).
func requireCodex(t *testing.T) string {
	return requireNative(t, "Codex", "@openai/codex-*/vendor/*/bin/codex")
}

// codexConfig is the config.toml of a Codex run against a gateway at baseURL (README.md,
// "Codex and the Agents SDK"): a provider of its own that speaks the Responses API, its
// key from GATEWAY_API_KEY, no analytics and no update check, so that Codex sends its
// requests to baseURL and nothing anywhere else. model and effort
// (model_reasoning_effort), when not empty, are the default model and reasoning effort.
func codexConfig(baseURL, model, effort string) string {
	var top string
	if model != "" {
		top = "model = \"" + model + "\"\n"
	}
	if effort != "" {
		top += "model_reasoning_effort = \"" + effort + "\"\n"
	}
	return top + `model_provider = "gateway"
check_for_update_on_startup = false

[model_providers.gateway]
name = "LLM gateway"
base_url = "` + baseURL + `"
env_key = "GATEWAY_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
`
}

// codexRun is one Codex user: its own CODEX_HOME (config.toml, sessions for
// `exec resume`) and working directory, against one base URL.
type codexRun struct {
	bin  string
	home string // HOME and CODEX_HOME
	dir  string // the working directory: where exec_command runs commands
	key  string // GATEWAY_API_KEY
}

// newCodexRun makes a CODEX_HOME whose config.toml points at baseURL (".../v1") with
// model and effort as the defaults (codexConfig), and a working directory.
func newCodexRun(t *testing.T, bin, baseURL, model, effort, key string) codexRun {
	t.Helper()
	c := codexRun{bin: bin, home: t.TempDir(), dir: t.TempDir(), key: key}
	require.NoError(t, os.WriteFile(filepath.Join(c.home, "config.toml"), []byte(codexConfig(baseURL, model, effort)), 0o600))
	return c
}

// exec runs `codex exec` with args (a prompt, or `resume --last` and a prompt) in the
// working directory, sandboxed to it, and returns what it printed. The environment is
// built from nothing but PATH, so no OPENAI_* or proxy variable of the machine reaches it;
// standard input is empty, so it reads no prompt from there.
func (c codexRun) exec(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, codexTimeout)
	defer cancel()
	// exec's own flags before a subcommand such as resume, which takes fewer.
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"exec", "--skip-git-repo-check", "--sandbox", "workspace-write"}, args...)...)
	cmd.Dir = c.dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + c.home,
		"CODEX_HOME=" + c.home,
		"GATEWAY_API_KEY=" + c.key,
	}
	cmd.WaitDelay = 5 * time.Second // a child that keeps the pipes open cannot hang the test
	return cmd.CombinedOutput()
}

// codexToolLoop runs Codex's two turns through the gateway g: a task whose exec_command
// call runs a real command in the working directory, then `exec resume --last` whose
// command needs the first turn's file, so the whole first turn goes back through the
// gateway with the second. Codex names model (and effort, when not empty, its reasoning
// effort), which the gateway calls bedrock. It returns what Codex printed in each turn and
// the access lines of /v1/responses, in order.
func codexToolLoop(t *testing.T, g started, model, bedrock, effort string) (turns [2]string, lines []map[string]any) {
	t.Helper()
	c := newCodexRun(t, requireCodex(t), "http://"+g.HTTP+"/v1", model, effort, testKey)

	out, err := c.exec(t.Context(), "Use exec_command to run `echo first > notes.txt`")
	require.NoError(t, err, "codex exec: %s", out)
	t.Logf("turn 1: %s", out)
	turns[0] = string(out)
	assert.Contains(t, string(out), "Tool results received: exec_command", "the answer after the tool's output")
	notes, err := os.ReadFile(filepath.Join(c.dir, "notes.txt"))
	require.NoError(t, err, "the exec_command call ran")
	assert.Equal(t, "first\n", string(notes))

	out, err = c.exec(t.Context(), "resume", "--last", "Now use exec_command to run `mv notes.txt done.txt`")
	require.NoError(t, err, "codex exec resume --last: %s", out)
	t.Logf("turn 2: %s", out)
	turns[1] = string(out)
	done, err := os.ReadFile(filepath.Join(c.dir, "done.txt"))
	require.NoError(t, err, "the second turn's exec_command call ran on the first turn's file")
	assert.Equal(t, "first\n", string(done))
	assert.NoFileExists(t, filepath.Join(c.dir, "notes.txt"))

	for _, e := range g.logs.FilterMessage("http").AllUntimed() {
		if m := e.ContextMap(); m["route"] == "/v1/responses" {
			lines = append(lines, m)
		}
	}
	// Two requests a turn (the call, the answer after its output), every one answered.
	require.Len(t, lines, 4, "requests to /v1/responses")
	var calls int
	for _, m := range lines {
		assert.Equal(t, "ok", m["code"], "access line %v", m)
		assert.Equal(t, true, m["stream"], "access line %v", m)
		assert.Equal(t, bedrock, m["model"], "access line %v", m)
		n, _ := m["tool_calls"].(int)
		calls += n
	}
	assert.Equal(t, 2, calls, "tool calls answered")
	assert.Zero(t, metricValue(t, g, "gateway_upstream_errors_total", nil), "a Bedrock error")
	return turns, lines
}

// TestCodexConfigInReadme holds the README's config.toml for Codex ("Codex and the Agents
// SDK") to the one the tests run Codex with, so that what users copy is what was tested.
func TestCodexConfigInReadme(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(md), "\n### Codex and the Agents SDK\n")
	require.True(t, found, "the README's section on Codex")
	var toml []string
	for _, b := range fencedBlocks(section) {
		if b.info == "toml" {
			toml = append(toml, b.text)
		}
	}
	require.NotEmpty(t, toml, "a toml block in the README's section on Codex")
	assert.Equal(t, codexConfig("http://localhost:8080/v1", "claude-sonnet-4-5", "medium"), toml[0])
}

// TestCodexThroughGateway runs the pinned Codex, unmodified, through the gateway's
// Responses API on the simulator (codexToolLoop): on a Claude model by Anthropic's name
// (which the gateway resolves to its region's inference profile) with reasoning on
// (model_reasoning_effort: Codex sends reasoning.effort and summary, and with store false
// hands every reasoning item back), where thinking is kept across the tool loop
// (assertThoughAfterOutput: by the gateway's reasoning cache, or by encrypted_content once
// the surface seals) and its reasoning reaches Codex as summary text; and on a model without reasoning through an
// alias, where the gateway drops it; and through an alias named gpt-5.5, a model Codex
// knows, for which it sends other tools. No request may reach Bedrock invalid.
func TestCodexThroughGateway(t *testing.T) {
	t.Parallel()
	requireCodex(t)
	t.Run("claude-reasoning", func(t *testing.T) {
		t.Parallel()
		cfg := defaultConfig(t)
		cfg.Sim.Enabled = true
		g := start(t, cfg)
		turns, _ := codexToolLoop(t, g, "claude-sonnet-4-5", sonnet45, "medium")
		// The simulator's reasoning, as summary parts Codex prints.
		assert.Contains(t, turns[0], "The user asks \"Use exec_command to run `echo first > notes.txt`\"; I will call exec_command.")
		assert.Contains(t, turns[1], "I will call exec_command.")
		assertThoughAfterOutput(t, g, turns)
	})
	t.Run("nova-pro", func(t *testing.T) {
		t.Parallel()
		cfg := defaultConfig(t)
		cfg.Sim.Enabled = true
		cfg.ModelAliases = map[string][]config.Target{"nova-pro": {{ModelID: novaPro}}}
		g := start(t, cfg)
		turns, lines := codexToolLoop(t, g, "nova-pro", novaPro, "")
		for _, m := range lines {
			assert.Nil(t, m["thinking"], "access line %v", m)
		}
		assert.NotContains(t, turns[0], "I will call exec_command.", "reasoning from a model without it")
	})
	t.Run("gpt-5.5-alias", func(t *testing.T) {
		// A name Codex knows: it sends a client-run tool_search and web_search with
		// search_content_types beside its functions (testdata/codex), which the gateway takes.
		t.Parallel()
		cfg := defaultConfig(t)
		cfg.Sim.Enabled = true
		cfg.ModelAliases = map[string][]config.Target{"gpt-5.5": {{ModelID: sonnet45}}}
		g := start(t, cfg)
		codexToolLoop(t, g, "gpt-5.5", sonnet45, "medium")
	})
}

// TestCodexReasoningThroughEncryptedContent is the Claude tool loop of
// TestCodexThroughGateway on a gateway that keeps no reasoning (reasoning_cache
// max_entries=0), as replicas without a shared cache are to one another: thinking can then
// survive Codex's tool loop only through encrypted_content, which Codex asks for
// (include: reasoning.encrypted_content) and hands back with each reasoning item. Each
// request with the tool's output must keep thinking on (assertThoughAfterOutput), with
// nothing restored from a cache. It fails (thinking disabled-missing-signature) until the
// Responses surface seals Bedrock's reasoning blocks into encrypted_content (issue 26,
// docs/PROTOCOL.md 16).
func TestCodexReasoningThroughEncryptedContent(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.ReasoningCache.MaxEntries = 0
	g := start(t, cfg)
	turns, lines := codexToolLoop(t, g, "claude-sonnet-4-5", sonnet45, "medium")
	assertThoughAfterOutput(t, g, turns)
	for _, i := range []int{1, 3} {
		assert.NotEqual(t, "restored", lines[i]["thinking"], "no cache to restore from, turn %d: %v", i/2+1, lines[i])
	}
}

// assertThoughAfterOutput asserts that thinking stayed on for the request of each turn
// that carries the tool's output: the model reasoned (the simulator's reasoning after tool
// results, which Codex prints as a summary), and the gateway turned thinking off for none.
func assertThoughAfterOutput(t *testing.T, g started, turns [2]string) {
	t.Helper()
	for i, out := range turns {
		assert.True(t, strings.Contains(out, "The tool results are in; I will answer from the tool results."),
			"turn %d: Codex printed no reasoning of the model on the request with the tool's output (its output is logged above)", i+1)
	}
	assert.Zero(t, metricValue(t, g, "gateway_thinking_disabled_total", nil), "requests sent without the thinking they asked for")
}
