package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/config"
)

// The documentation is held to the code here: the README's curl examples are run and their
// output compared with what the README shows, and every relative link of the README and
// docs/ is checked against the file and heading it points to (internal/config's
// TestDocsListEverySetting holds docs/CONFIG.md to the table of settings). The rules are
// written out for authors in docs/DEVELOPMENT.md, "The README's examples are tests".

// block is one fenced block of a Markdown file.
type block struct {
	info string // the fence's info string: "sh", "json"
	text string // the lines between the fences, each ending in "\n"
	line int    // the line of the opening fence, from 1
	// adjacent: only blank lines stand between this block and the one before it.
	adjacent bool
}

// fencedBlocks returns the fenced blocks of a Markdown text, in order.
func fencedBlocks(md string) []block {
	var blocks []block
	var cur *block
	prose := false // a non-blank line since the last block closed
	for i, l := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &block{info: strings.TrimSpace(l[3:]), line: i + 1, adjacent: len(blocks) > 0 && !prose}
		case cur != nil && strings.TrimSpace(l) == "```":
			blocks, cur, prose = append(blocks, *cur), nil, false
		case cur != nil:
			cur.text += l + "\n"
		case strings.TrimSpace(l) != "":
			prose = true
		}
	}
	return blocks
}

// shellCommands splits a shell script into its commands: lines joined where a line ends in
// a backslash or leaves a single-quoted string open. It knows only what the README's
// examples use (single quotes, continuations), which is enough to tell a curl command from
// any other.
func shellCommands(script string) []string {
	var cmds []string
	var cur strings.Builder
	open := false // inside a single-quoted string
	for _, l := range strings.Split(script, "\n") {
		if cur.Len() == 0 && (strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#")) {
			continue
		}
		cur.WriteString(l + "\n")
		if strings.Count(l, "'")%2 == 1 {
			open = !open
		}
		if !open && !strings.HasSuffix(l, `\`) {
			cmds = append(cmds, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		cmds = append(cmds, cur.String())
	}
	return cmds
}

// example is a README example: a sh block of curl commands to the gateway of make run, and
// the output the README shows for it, if any.
type example struct {
	block
	output *block
}

// readmeExamples returns the README's examples. A sh block is one when a command of it
// curls localhost:8080; every command of it must then be such a curl, so that the test
// runs nothing else. Its output is the json, jsonl or text block right after it.
func readmeExamples(t *testing.T, md string) []example {
	t.Helper()
	blocks := fencedBlocks(md)
	var examples []example
	for i, b := range blocks {
		if b.info != "sh" {
			continue
		}
		cmds := shellCommands(b.text)
		isCurl := func(c string) bool { return strings.HasPrefix(c, "curl ") && strings.Contains(c, "localhost:8080") }
		n := 0
		for _, c := range cmds {
			if isCurl(c) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		if n != len(cmds) {
			t.Errorf("README.md line %d: a block with curl examples holds other commands too; give them a block of their own", b.line)
			continue
		}
		ex := example{block: b}
		if i+1 < len(blocks) && blocks[i+1].adjacent && slices.Contains([]string{"json", "jsonl", "text"}, blocks[i+1].info) {
			ex.output = &blocks[i+1]
		}
		examples = append(examples, ex)
	}
	return examples
}

// curlPrelude makes each curl of an example print its answer followed by a line break (a
// JSON answer has none, and the README shows each answer on its own lines), and its HTTP
// status on stderr. -q keeps the user's ~/.curlrc out.
const curlPrelude = `curl() { command curl -q -w '%{stderr}%{http_code}\n' "$@"; echo; }
`

// runExample runs ex against the gateway at addr with sh and the real curl, and returns
// what it printed and the HTTP status of each request.
func runExample(t *testing.T, ex example, addr string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	script := curlPrelude + strings.ReplaceAll(ex.text, "localhost:8080", addr)
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	// Nothing of the environment that could change what curl does: no proxy, no curlrc.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "no_proxy=*", "NO_PROXY=*"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "README.md line %d: the example failed: %s", ex.line, stderr.String())
	return stdout.String(), strings.Fields(stderr.String())
}

// outputLines are the lines of a shown or printed output that are compared: trailing
// spaces cut, blank lines left out.
func outputLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, " \t\r"); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// ellipsis is the README's elision: within a line any run of characters; alone on a line
// any number of lines.
const ellipsis = "…"

// shownLine is a line of shown output as a pattern.
func shownLine(l string) *regexp.Regexp {
	parts := strings.Split(l, ellipsis)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// matchesShown reports whether the printed lines are what the shown lines show.
func matchesShown(shown, printed []string) bool {
	if len(shown) == 0 {
		return len(printed) == 0
	}
	if shown[0] == ellipsis {
		for skip := 0; skip <= len(printed); skip++ {
			if matchesShown(shown[1:], printed[skip:]) {
				return true
			}
		}
		return false
	}
	return len(printed) > 0 && shownLine(shown[0]).MatchString(printed[0]) && matchesShown(shown[1:], printed[1:])
}

// TestReadmeExamples runs every curl example of the README against a gateway started as
// make run starts it (the simulator, no keys), and fails when one prints other than what
// the README shows after it, or, showing nothing, is not answered 2xx.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl not found: the README's examples are curl commands, and this test runs them with the real curl")
	}
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	examples := readmeExamples(t, string(md))
	shown := 0
	for _, ex := range examples {
		if ex.output != nil {
			shown++
		}
	}
	// A parser that found nothing would pass; the README has examples with output.
	require.GreaterOrEqual(t, shown, 5, "README examples with shown output: the parser lost them")

	cfg, err := config.Load([]string{"--sim", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, func(string) string { return "" })
	require.NoError(t, err)
	require.Empty(t, cfg.APIKeys, "make run has no keys")
	addrs, _ := serve(t, cfg, zap.NewNop())

	for _, ex := range examples {
		t.Run(fmt.Sprintf("line %d", ex.line), func(t *testing.T) {
			t.Parallel() // each example is its own conversation; curl's startup dominates
			printed, statuses := runExample(t, ex, addrs.HTTP)
			if ex.output == nil {
				for _, s := range statuses {
					assert.Regexp(t, `^2\d\d$`, s, "README.md line %d shows no output, so every request must succeed", ex.line)
				}
				return
			}
			if !matchesShown(outputLines(ex.output.text), outputLines(printed)) {
				t.Errorf("README.md line %d: the example printed other than what line %d shows (… matches any run of characters; alone on a line, any lines).\nshown:\n%s\nprinted:\n%s",
					ex.line, ex.output.line, ex.output.text, printed)
			}
		})
	}
}

// TestMatchesShown pins the elision rule TestReadmeExamples compares by.
func TestMatchesShown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		shown, printed string
		match          bool
	}{
		{`{"id":"tooluse_…","n":1}`, `{"id":"tooluse_AbC123","n":1}`, true},
		{`{"id":"tooluse_…","n":1}`, `{"id":"tooluse_AbC123","n":2}`, false},
		{`{"usage":{…},"x":1}`, `{"usage":{"a":{"b":2}},"x":1}`, true},
		{`{"a":1,…}`, `{"a":1,"b":2}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{"first\n…\nlast", "first\nlast", true},
		{"first\n…\nlast", "first\nx\ny\nlast", true},
		{"first\n…\nlast", "first\nx\nlast\nextra", false},
		{"a\n\nb\n", "a\nb", true},
		{"a\nb", "a", false},
		{"a.b", "axb", false}, // only … is a wildcard
	} {
		assert.Equal(t, c.match, matchesShown(outputLines(c.shown), outputLines(c.printed)), "shown %q, printed %q", c.shown, c.printed)
	}
}

// TestReadmeExampleParsing pins which blocks TestReadmeExamples runs and which output it
// holds them to.
func TestReadmeExampleParsing(t *testing.T) {
	t.Parallel()
	md := "Prose.\n\n```sh\ncurl -s localhost:8080/a -d '{\n  \"x\": 1}'\ncurl -s localhost:8080/b\n```\n\n```json\n{\"a\":1}\n```\n" +
		"\n```sh\ncurl -s localhost:8080/c\n```\n\nProse between.\n\n```json\n{}\n```\n" +
		"\n```sh\ngo run ./cmd/gateway\n```\n\n```json\n{}\n```\n"
	examples := readmeExamples(t, md)
	require.Len(t, examples, 2, "the go run block is no example")
	assert.Len(t, shellCommands(examples[0].text), 2, "a quoted body over two lines is one command")
	require.NotNil(t, examples[0].output)
	assert.Equal(t, "{\"a\":1}\n", examples[0].output.text)
	assert.Nil(t, examples[1].output, "a block after prose is not the example's output")
}

// markdownLink is an inline link's target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingAnchors returns the anchors GitHub gives a Markdown file's headings: the text
// lowercased, characters other than letters, digits, spaces, hyphens and underscores
// dropped, spaces made hyphens, and -1, -2… after repeats.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			a = fmt.Sprintf("%s-%d", a, n)
		}
		seen[b.String()]++
		anchors[a] = true
	}
	return anchors
}

// TestDocLinks fails when a relative link of the README or a page under docs/ points to a
// file that does not exist, or to a heading its file does not have.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	pages = append(pages, "../README.md")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		md, err := os.ReadFile(path)
		require.NoError(t, err)
		anchors[path] = headingAnchors(string(md))
		return anchors[path]
	}
	links := 0
	for _, page := range pages {
		md, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(md), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: no such file", page, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s: link %q: %s has no heading with that anchor", page, target, path)
			}
		}
	}
	require.Greater(t, links, 20, "relative links found: the parser lost them")
}
