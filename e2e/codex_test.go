//go:build clients

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Codex CLI (npm @openai/codex, pinned in test/node/package-lock.json) is a native program:
// npm installs the one for this platform as an optional dependency,
// @openai/codex-<platform> (an alias of @openai/codex@<version>-<platform>), and
// bin/codex.js only finds and starts it. The tests run the platform package's program
// itself, without node in between.

// codexTimeout bounds one `codex exec` run; on a gateway that answers at once it takes a few
// seconds (the sandbox and the shell start).
const codexTimeout = 2 * time.Minute

// requireCodex finds the installed Codex program, or fails: CI installs it, and a test that
// skipped would hide that it never ran.
func requireCodex(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(nodeDir)
	require.NoError(t, err)
	found, err := filepath.Glob(filepath.Join(dir, "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	require.NoError(t, err)
	if len(found) != 1 {
		t.Fatalf("want the one Codex program of this platform under %s/node_modules/@openai/codex-*/vendor/*/bin/, found %q: run `make clients`, which installs test/node's packages (npm ci installs the platform's optional dependency)", dir, found)
	}
	return found[0]
}

// codexConfig is the config.toml of a Codex run against a gateway at baseURL (README.md,
// "Codex and the Agents SDK"): a provider of its own that speaks the Responses API, its
// key from GATEWAY_API_KEY, no analytics and no update check, so that Codex sends its
// requests to baseURL and nothing anywhere else. model, when not empty, is the default
// model.
func codexConfig(baseURL, model string) string {
	var top string
	if model != "" {
		top = "model = \"" + model + "\"\n"
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
// model as the default model, and a working directory.
func newCodexRun(t *testing.T, bin, baseURL, model, key string) codexRun {
	t.Helper()
	c := codexRun{bin: bin, home: t.TempDir(), dir: t.TempDir(), key: key}
	require.NoError(t, os.WriteFile(filepath.Join(c.home, "config.toml"), []byte(codexConfig(baseURL, model)), 0o600))
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
