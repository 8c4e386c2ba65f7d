//go:build clients

package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newCaptureServer records every request and answers POST /v1/messages as Anthropic's API
// would, with the least that Claude Code accepts (capturedAnswer).
func newCaptureServer(t *testing.T) *recorder {
	return newRecorder(t, "/v1/messages", answerMessages)
}

func answerMessages(w http.ResponseWriter, n int, body []byte) {
	var req capturedRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	msg := capturedAnswer(n, req)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.MarshalWrite(w, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range sseEvents(msg) {
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
}

// capturedRequest is the part of a Messages request that capturedAnswer reads.
type capturedRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string         `json:"role"`
		Content jsontext.Value `json:"content"`
	} `json:"messages"`
}

// backquoted is a command in the user's words: `ls`.
var backquoted = regexp.MustCompile("`([^`]+)`")

// capturedAnswer is the capture server's message for request n: a thinking block when
// thinking is on (so that the next request shows how Claude Code replays it), then a call
// of the Bash tool with the backquoted command of the user's own words (the last text
// block of the last user message, after Claude Code's system reminders) when the last
// user message is not a tool result, else a line of text.
func capturedAnswer(n int, req capturedRequest) map[string]any {
	var content []map[string]any
	if req.Thinking != nil && req.Thinking.Type != "disabled" {
		content = append(content, map[string]any{"type": "thinking", "thinking": "", "signature": fmt.Sprintf("capture-signature-%d", n)})
	}
	var words string
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		words = ""
		for _, b := range blocks {
			if b.Type == "text" {
				words = b.Text
			}
		}
	}
	stop := "end_turn"
	bash := slices.ContainsFunc(req.Tools, func(t struct {
		Name string `json:"name"`
	}) bool {
		return t.Name == "Bash"
	})
	if cmd := backquoted.FindStringSubmatch(words); bash && cmd != nil {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_capture_%d", n), "name": "Bash",
			"input": map[string]any{"command": cmd[1], "description": "Run the command"}})
		stop = "tool_use"
	} else {
		content = append(content, map[string]any{"type": "text", "text": "Done."})
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_capture_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	}
}

// sseEvents is msg as the events of a stream, each block in one delta.
func sseEvents(msg map[string]any) []map[string]any {
	start := maps.Clone(msg)
	start["content"], start["stop_reason"] = []any{}, nil
	evs := []map[string]any{{"type": "message_start", "message": start}}
	for i, block := range msg["content"].([]map[string]any) {
		empty := maps.Clone(block)
		var delta map[string]any
		switch block["type"] {
		case "thinking":
			empty["signature"] = ""
			delta = map[string]any{"type": "signature_delta", "signature": block["signature"]}
		case "tool_use":
			empty["input"] = map[string]any{}
			input, _ := json.Marshal(block["input"])
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
		default:
			empty["text"] = ""
			delta = map[string]any{"type": "text_delta", "text": block["text"]}
		}
		evs = append(evs,
			map[string]any{"type": "content_block_start", "index": i, "content_block": empty},
			map[string]any{"type": "content_block_delta", "index": i, "delta": delta},
			map[string]any{"type": "content_block_stop", "index": i})
	}
	return append(evs,
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}},
		map[string]any{"type": "message_stop"})
}

// The values of a captured request that differ between runs or are secret, replaced in
// the fixtures.
var (
	deviceID      = regexp.MustCompile(`(device_id\\":\\")[0-9a-f]+`)
	fixtureKey    = "sk-ant-fixture-key"
	fixtureHome   = "/home/user"
	fixtureDir    = "/home/user/project"
	fixtureSessID = "00000000-0000-4000-8000-000000000000"
)

// sanitize replaces in r the key, the session id, the device id and the run's temporary
// directories, so that a fixture holds no secret and reads the same from run to run.
func sanitize(r captured, c claudeRun) captured {
	sess := r.Headers["X-Claude-Code-Session-Id"]
	replace := func(s string) string {
		s = strings.ReplaceAll(s, c.key, fixtureKey)
		s = strings.ReplaceAll(s, c.dir, fixtureDir)
		s = strings.ReplaceAll(s, c.home, fixtureHome)
		if sess != "" {
			s = strings.ReplaceAll(s, sess, fixtureSessID)
		}
		return deviceID.ReplaceAllString(s, "${1}0000000000000000000000000000000000000000000000000000000000000000")
	}
	headers := map[string]string{}
	for name, v := range r.Headers {
		headers[name] = replace(v)
	}
	body := jsontext.Value(replace(string(r.Body)))
	if body.IsValid() {
		_ = body.Indent()
	}
	return captured{Method: r.Method, Path: r.Path, Headers: headers, Body: body}
}

// claudeCodeScenario is a sequence of `claude -p` runs in one HOME and working directory.
type claudeCodeScenario struct {
	name  string
	runs  [][]string // each run's arguments
	after func(t *testing.T, c claudeRun)
}

// claudeCodeScenarios are what the fixtures record: a tool loop on the default model with
// a second turn by --continue, the same on claude-sonnet-4-5 (thinking with a budget rather
// than adaptive), and the names that --model's aliases and an older model send.
var claudeCodeScenarios = []claudeCodeScenario{
	{
		name: "tool-loop",
		runs: [][]string{
			{"-p", "Use the Bash tool to run `touch hello.txt`", "--allowedTools", "Bash"},
			{"-p", "--continue", "What did the command create?", "--allowedTools", "Bash"},
		},
		after: func(t *testing.T, c claudeRun) {
			assert.FileExists(t, filepath.Join(c.dir, "hello.txt"), "Claude Code ran the Bash call the capture server answered")
		},
	},
	{
		name: "sonnet-4-5-tool-loop",
		runs: [][]string{
			{"-p", "Use the Bash tool to run `touch hello.txt`", "--allowedTools", "Bash", "--model", "claude-sonnet-4-5"},
			{"-p", "--continue", "What did the command create?", "--allowedTools", "Bash", "--model", "claude-sonnet-4-5"},
		},
	},
	{
		name: "models",
		runs: [][]string{
			{"-p", "Say hello.", "--model", "sonnet"},
			{"-p", "Say hello.", "--model", "haiku"},
			{"-p", "Say hello.", "--model", "claude-3-5-haiku-latest"},
		},
	},
}

// TestClaudeCodeRequests runs the pinned Claude Code against a server that records its
// requests, and checks that their shape (shapeOf: headers, betas, fields, tools, message
// roles and blocks) is the shape of the fixtures in testdata/claude-code, which the
// gateway's Anthropic surface is built and tested against: a new Claude Code that sends
// something else fails here first. -update rewrites the fixtures.
func TestClaudeCodeRequests(t *testing.T) {
	t.Parallel()
	bin := requireClaude(t)
	for _, sc := range claudeCodeScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCaptureServer(t)
			c := newClaudeRun(t, bin, srv.URL, "sk-ant-capture-"+sc.name)
			for _, args := range sc.runs {
				out, err := c.run(t.Context(), nil, args...)
				require.NoError(t, err, "claude %q: %s", args, out)
			}
			if sc.after != nil {
				sc.after(t, c)
			}
			var got []captured
			for _, r := range srv.requests() {
				got = append(got, sanitize(r, c))
			}
			file := filepath.Join(claudeCodeFixtures, sc.name+".json")
			if updateFixtures() { // -update (codex_capture_test.go)
				data, err := json.Marshal(got, jsontext.WithIndent("  "))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(file, append(data, '\n'), 0o644))
			}
			want := readCaptured(t, file)
			assert.Equal(t, shapesOf(t, want), shapesOf(t, got), "the requests of the pinned Claude Code are not the fixtures' (%s): rerun with -update if Claude Code was upgraded, and read what changed", file)
		})
	}
}

// requestShape is what a captured request looks like, without its text: what the
// gateway must accept, translate or drop.
type requestShape struct {
	Method, Path string
	Headers      []string // names, but those of the connection
	Version      string   // anthropic-version
	Betas        []string // anthropic-beta, in order
	Fields       []string // the body's members, in order
	Model        string
	MaxTokens    int64
	Thinking     string // as sent, compact
	Tools        []string
	System       []string
	Messages     []string
}

// shapesOf is the shape of each request of reqs.
func shapesOf(t *testing.T, reqs []captured) []requestShape {
	t.Helper()
	var shapes []requestShape
	for _, r := range reqs {
		s := requestShape{Method: r.Method, Path: r.Path, Version: r.Headers["Anthropic-Version"]}
		for name := range r.Headers {
			switch name {
			case "Host", "Connection", "Content-Length", "Accept-Encoding":
			default:
				s.Headers = append(s.Headers, name)
			}
		}
		slices.Sort(s.Headers)
		if b := r.Headers["Anthropic-Beta"]; b != "" {
			s.Betas = strings.Split(b, ",")
		}
		var body struct {
			Model     string                      `json:"model"`
			MaxTokens int64                       `json:"max_tokens"`
			Thinking  jsontext.Value              `json:"thinking"`
			Tools     []map[string]jsontext.Value `json:"tools"`
			System    jsontext.Value              `json:"system"`
			Messages  []struct {
				Role    string         `json:"role"`
				Content jsontext.Value `json:"content"`
			} `json:"messages"`
		}
		if len(r.Body) > 0 {
			require.NoError(t, json.Unmarshal(r.Body, &body))
			dec := jsontext.NewDecoder(bytes.NewReader(r.Body))
			_, _ = dec.ReadToken()
			for dec.PeekKind() != '}' {
				name, err := dec.ReadToken()
				require.NoError(t, err)
				s.Fields = append(s.Fields, name.String())
				require.NoError(t, dec.SkipValue())
			}
		}
		s.Model, s.MaxTokens = body.Model, body.MaxTokens
		if body.Thinking != nil {
			th := body.Thinking.Clone()
			require.NoError(t, th.Compact())
			s.Thinking = string(th)
		}
		for _, tool := range body.Tools {
			var name string
			_ = json.Unmarshal(tool["name"], &name)
			var extra []string
			for k := range tool {
				if k != "name" && k != "description" && k != "input_schema" {
					extra = append(extra, k)
				}
			}
			slices.Sort(extra)
			s.Tools = append(s.Tools, strings.Join(append([]string{name}, extra...), " "))
		}
		s.System = blockShapes(body.System)
		for _, m := range body.Messages {
			s.Messages = append(s.Messages, m.Role+": "+strings.Join(blockShapes(m.Content), ", "))
		}
		shapes = append(shapes, s)
	}
	return shapes
}

// blockShapes is the shape of a system prompt or a message's content: "string", or each
// block's type and its cache_control when it has one.
func blockShapes(bs jsontext.Value) []string {
	if len(bs) == 0 {
		return nil
	}
	if bs.Kind() == '"' {
		return []string{"string"}
	}
	var list []struct {
		Type         string         `json:"type"`
		CacheControl jsontext.Value `json:"cache_control"`
	}
	if err := json.Unmarshal(bs, &list); err != nil {
		return []string{"invalid: " + err.Error()}
	}
	var shapes []string
	for _, b := range list {
		if b.CacheControl == nil {
			shapes = append(shapes, b.Type)
			continue
		}
		cc := b.CacheControl.Clone()
		_ = cc.Compact()
		shapes = append(shapes, b.Type+" "+string(cc))
	}
	return shapes
}
