//go:build clients

package e2e

import (
	"bytes"
	"flag"
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

// The flag -update rewrites the fixtures of the client captures from what the pinned
// clients send: go test -tags clients ./e2e -run TestCodexRequests -update. Every capture
// test of the package reads the one flag; the first file to define it does (another
// client's capture test may have, as package variables are set before init runs).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the captured requests of testdata/ from what the pinned clients send")
	}
}

// updateFixtures reports whether -update was given.
func updateFixtures() bool {
	return flag.Lookup("update").Value.String() == "true"
}

// codexFixtures holds, per scenario, the requests the pinned Codex sends (README.md there
// says what they show).
const codexFixtures = "testdata/codex"

// newCodexCapture records every request and answers POST /v1/responses as OpenAI's
// Responses API would, in server-sent events (codexAnswer, codexEvents); what it records is
// compared or written only once codexSanitize has replaced secrets, ids and the run's
// temporary paths.
func newCodexCapture(t *testing.T) *recorder {
	return newRecorder(t, "/v1/responses", answerResponses)
}

func answerResponses(w http.ResponseWriter, n int, body []byte) {
	var req codexCaptured
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, ev := range codexEvents(codexAnswer(n, req)) {
		ev["sequence_number"] = i
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
}

// codexCaptured is the part of a Responses request that codexAnswer reads.
type codexCaptured struct {
	Model   string   `json:"model"`
	Include []string `json:"include"`
	Tools   []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Input []struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"input"`
}

// codexCommand is a command in the user's words: `ls`.
var codexCommand = regexp.MustCompile("`([^`]+)`")

// codexAnswer is the capture server's response to request n: when the last input item is
// the user's message quoting a command and exec_command is among the tools, a reasoning
// item (with a summary, and encrypted_content when asked for, so that the next request
// shows how Codex hands it back) and a call of exec_command with that command; else the
// message "Done.".
func codexAnswer(n int, req codexCaptured) map[string]any {
	var output []map[string]any
	var words string
	if k := len(req.Input) - 1; k >= 0 && req.Input[k].Type == "message" && req.Input[k].Role == "user" {
		for _, c := range req.Input[k].Content {
			words += c.Text
		}
	}
	execTool := slices.ContainsFunc(req.Tools, func(t struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}) bool {
		return t.Type == "function" && t.Name == "exec_command"
	})
	if cmd := codexCommand.FindStringSubmatch(words); execTool && cmd != nil {
		reasoning := map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_capture_%d", n),
			"summary": []map[string]any{{"type": "summary_text", "text": "The user quoted a command: run it."}}}
		if slices.Contains(req.Include, "reasoning.encrypted_content") {
			reasoning["encrypted_content"] = fmt.Sprintf("capture-encrypted-%d", n)
		}
		args, _ := json.Marshal(map[string]string{"cmd": cmd[1]})
		output = append(output, reasoning, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_capture_%d", n),
			"call_id": fmt.Sprintf("call_capture_%d", n), "name": "exec_command", "arguments": string(args), "status": "completed"})
	} else {
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_capture_%d", n), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": "Done.", "annotations": []any{}}}})
	}
	return map[string]any{
		"id": fmt.Sprintf("resp_capture_%d", n), "object": "response", "created_at": 1700000000, "status": "completed",
		"model": req.Model, "output": output,
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 2}, "total_tokens": 15},
	}
}

// codexEvents is resp as the events of a stream: created and in_progress with no output,
// each item added, its text, summary or arguments in one delta, done, then completed.
func codexEvents(resp map[string]any) []map[string]any {
	start := map[string]any{}
	for k, v := range resp {
		start[k] = v
	}
	start["status"], start["output"], start["usage"] = "in_progress", []any{}, nil
	evs := []map[string]any{{"type": "response.created", "response": start}, {"type": "response.in_progress", "response": start}}
	for i, item := range resp["output"].([]map[string]any) {
		id := item["id"]
		evs = append(evs, map[string]any{"type": "response.output_item.added", "output_index": i, "item": item})
		switch item["type"] {
		case "message":
			text := item["content"].([]map[string]any)[0]["text"]
			evs = append(evs,
				map[string]any{"type": "response.content_part.added", "item_id": id, "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}},
				map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": i, "content_index": 0, "delta": text},
				map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": i, "content_index": 0, "text": text},
				map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": i, "content_index": 0, "part": item["content"].([]map[string]any)[0]})
		case "reasoning":
			text := item["summary"].([]map[string]any)[0]["text"]
			evs = append(evs,
				map[string]any{"type": "response.reasoning_summary_part.added", "item_id": id, "output_index": i, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}},
				map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": i, "summary_index": 0, "delta": text},
				map[string]any{"type": "response.reasoning_summary_text.done", "item_id": id, "output_index": i, "summary_index": 0, "text": text},
				map[string]any{"type": "response.reasoning_summary_part.done", "item_id": id, "output_index": i, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": text}})
		case "function_call":
			evs = append(evs,
				map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": item["arguments"]},
				map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": i, "arguments": item["arguments"]})
		}
		evs = append(evs, map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	return append(evs, map[string]any{"type": "response.completed", "response": resp})
}

// The values of a captured request that differ between runs or are secret, replaced in
// the fixtures.
var (
	codexUUID        = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	codexUnixMillis  = regexp.MustCompile(`(turn_started_at_unix_ms\\*":)[0-9]+`)
	codexCurrentDate = regexp.MustCompile(`<current_date>[^<]*</current_date>`)
	codexTimezone    = regexp.MustCompile(`<timezone>[^<]*</timezone>`)
	codexChunk       = regexp.MustCompile(`Chunk ID: [0-9a-f]+`)
	codexWallTime    = regexp.MustCompile(`Wall time: [0-9.]+ seconds`)
	codexFixtureKey  = "sk-codex-fixture-key"
)

// codexSanitize replaces in each request of reqs the key, every UUID (the session, thread,
// turn, installation and item ids; the same UUID by the same number across the scenario,
// so the fixtures still show which ids are equal), the start times, the date, the time zone
// and the run's temporary directories (HOME /home/user, the working directory
// /home/user/project), so that a fixture holds no secret and reads the same from run to run.
func codexSanitize(reqs []captured, c codexRun) []captured {
	ids := map[string]string{}
	replace := func(s string) string {
		s = strings.ReplaceAll(s, c.key, codexFixtureKey)
		s = strings.ReplaceAll(s, c.dir, "/home/user/project")
		s = strings.ReplaceAll(s, c.home, "/home/user")
		s = codexUUID.ReplaceAllStringFunc(s, func(id string) string {
			if _, ok := ids[id]; !ok {
				ids[id] = fmt.Sprintf("00000000-0000-7000-8000-%012d", len(ids)+1)
			}
			return ids[id]
		})
		s = codexUnixMillis.ReplaceAllString(s, "${1}1700000000000")
		s = codexCurrentDate.ReplaceAllString(s, "<current_date>2026-01-01</current_date>")
		s = codexTimezone.ReplaceAllString(s, "<timezone>UTC</timezone>")
		s = codexChunk.ReplaceAllString(s, "Chunk ID: 000000")
		return codexWallTime.ReplaceAllString(s, "Wall time: 0.0000 seconds")
	}
	var out []captured
	for _, r := range reqs {
		// The body first, then the headers by name, so that the ids are numbered in an
		// order that is the same from run to run.
		body := jsontext.Value(replace(string(codexSortMetadata(r.Body))))
		headers := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(r.Headers)) {
			if name != "Content-Length" {
				headers[name] = replace(r.Headers[name])
			}
		}
		out = append(out, captured{Method: r.Method, Path: r.Path, Headers: headers, Body: body})
	}
	return out
}

// codexSortMetadata is body indented, with the members of client_metadata, which Codex
// sends in an order of its hash map's, sorted.
func codexSortMetadata(body jsontext.Value) jsontext.Value {
	var members map[string]jsontext.Value
	if json.Unmarshal(body, &members) != nil || members["client_metadata"] == nil {
		return body
	}
	sorted := members["client_metadata"].Clone()
	if sorted.Canonicalize() != nil {
		return body
	}
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out, jsontext.WithIndent("  "))
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for dec.PeekKind() != 0 {
		if dec.StackDepth() == 1 && dec.PeekKind() == '{' && dec.StackPointer() == "/client_metadata" {
			_ = dec.SkipValue()
			_ = enc.WriteValue(sorted)
			continue
		}
		tok, err := dec.ReadToken()
		if err != nil {
			break
		}
		_ = enc.WriteToken(tok)
	}
	return out.Bytes()
}

// codexScenario is a sequence of `codex exec` runs in one CODEX_HOME and working directory.
type codexScenario struct {
	name  string
	model string     // config.toml's model; empty: Codex's own default
	runs  [][]string // each run's arguments after exec's own flags
	after func(t *testing.T, c codexRun)
}

// codexScenarios are what the fixtures record: a tool loop with a second turn by
// `exec resume --last` on a model Codex does not know (as a Bedrock model is), the same
// on a model of OpenAI's that Codex knows, and a turn on Codex's default model.
var codexScenarios = []codexScenario{
	{
		name:  "tool-loop",
		model: "claude-sonnet-4-5",
		runs: [][]string{
			{"Use exec_command to run `echo first > notes.txt`"},
			{"resume", "--last", "Now use exec_command to run `mv notes.txt done.txt`"},
		},
		after: func(t *testing.T, c codexRun) {
			assert.FileExists(t, filepath.Join(c.dir, "done.txt"), "Codex ran both exec_command calls the capture server answered")
		},
	},
	{
		name:  "gpt-5.5-tool-loop",
		model: "gpt-5.5",
		runs: [][]string{
			{"Use exec_command to run `echo first > notes.txt`"},
			{"resume", "--last", "Now use exec_command to run `mv notes.txt done.txt`"},
		},
	},
	{
		name: "default-model",
		runs: [][]string{{"Say hello."}},
	},
}

// TestCodexRequests runs the pinned Codex against a server that records its requests, and
// checks that their shape (codexShapesOf: headers, fields and settings, tools, input items)
// is the shape of the fixtures in testdata/codex, which the gateway's Responses surface is
// built and tested against: a new Codex that sends something else fails here first.
// -update rewrites the fixtures.
func TestCodexRequests(t *testing.T) {
	t.Parallel()
	bin := requireCodex(t)
	for _, sc := range codexScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCodexCapture(t)
			c := newCodexRun(t, bin, srv.URL+"/v1", sc.model, "", "sk-codex-capture-"+sc.name)
			for _, args := range sc.runs {
				out, err := c.exec(t.Context(), args...)
				require.NoError(t, err, "codex exec %q: %s", args, out)
			}
			if sc.after != nil {
				sc.after(t, c)
			}
			got := codexSanitize(srv.requests(), c)
			file := filepath.Join(codexFixtures, sc.name+".json")
			if updateFixtures() {
				data, err := json.Marshal(got, jsontext.WithIndent("  "), json.Deterministic(true))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(file, append(data, '\n'), 0o644))
			}
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var want []captured
			require.NoError(t, json.Unmarshal(data, &want), file)
			assert.Equal(t, codexShapesOf(t, want), codexShapesOf(t, got), "the requests of the pinned Codex are not the fixtures' (%s): rerun with -update if Codex was upgraded, and read what changed", file)
		})
	}
}

// codexShape is what a captured request looks like, without its text: what the gateway
// must accept, translate or drop.
type codexShape struct {
	Method, Path string
	Headers      []string // names, but those of the connection
	Fields       []string // the body's members, in order
	Settings     []string // every member but input and tools, compact: "store false"
	Tools        []string
	Input        []string
}

// codexVarying are the members whose value differs from run to run, shown by name only.
var codexVarying = []string{"prompt_cache_key", "client_metadata"}

// codexShapesOf is the shape of each request of reqs.
func codexShapesOf(t *testing.T, reqs []captured) []codexShape {
	t.Helper()
	var shapes []codexShape
	for _, r := range reqs {
		s := codexShape{Method: r.Method, Path: r.Path}
		for name := range r.Headers {
			switch name {
			case "Host", "Connection", "Content-Length", "Accept-Encoding":
			default:
				s.Headers = append(s.Headers, name)
			}
		}
		slices.Sort(s.Headers)
		if len(r.Body) > 0 {
			var body struct {
				Tools []jsontext.Value `json:"tools"`
				Input []jsontext.Value `json:"input"`
			}
			require.NoError(t, json.Unmarshal(r.Body, &body))
			dec := jsontext.NewDecoder(bytes.NewReader(r.Body))
			_, _ = dec.ReadToken()
			for dec.PeekKind() != '}' {
				tok, err := dec.ReadToken()
				require.NoError(t, err)
				name := tok.String() // before ReadValue, which reuses the token's buffer
				v, err := dec.ReadValue()
				require.NoError(t, err)
				s.Fields = append(s.Fields, name)
				switch {
				case name == "input" || name == "tools":
				case slices.Contains(codexVarying, name):
					s.Settings = append(s.Settings, name+" "+v.Kind().String())
				default:
					v = v.Clone()
					require.NoError(t, v.Compact())
					s.Settings = append(s.Settings, name+" "+string(v))
				}
			}
			for _, tool := range body.Tools {
				s.Tools = append(s.Tools, codexToolShapes(t, tool)...)
			}
			for _, item := range body.Input {
				s.Input = append(s.Input, codexItemShapes(t, item)...)
			}
		}
		shapes = append(shapes, s)
	}
	return shapes
}

// codexToolShapes is a tool's type, name and other members ("function exec_command strict
// false"), and a namespace's tools each under its name ("namespace multi_agent_v1 /
// function spawn_agent strict false").
func codexToolShapes(t *testing.T, tool jsontext.Value) []string {
	t.Helper()
	var m map[string]jsontext.Value
	require.NoError(t, json.Unmarshal(tool, &m))
	var typ, name string
	_ = json.Unmarshal(m["type"], &typ)
	_ = json.Unmarshal(m["name"], &name)
	shape := strings.TrimSpace(typ + " " + name)
	var extra []string
	for k, v := range m {
		switch k {
		case "type", "name", "description", "parameters", "tools":
		case "format":
			var f struct {
				Type, Syntax string
			}
			_ = json.Unmarshal(v, &f)
			extra = append(extra, "format "+f.Type+" "+f.Syntax)
		default:
			v = v.Clone()
			_ = v.Compact()
			extra = append(extra, k+" "+string(v))
		}
	}
	slices.Sort(extra)
	shapes := []string{strings.Join(append([]string{shape}, extra...), " ")}
	var nested []jsontext.Value
	_ = json.Unmarshal(m["tools"], &nested)
	for _, n := range nested {
		for _, s := range codexToolShapes(t, n) {
			shapes = append(shapes, shape+" / "+s)
		}
	}
	return shapes
}

// codexItemShapes is an input item's type, role and content parts ("message developer:
// input_text, input_text"), the members of the others and their kinds ("reasoning: content
// null encrypted_content string id string summary ["), and the tools an additional_tools
// item brings.
func codexItemShapes(t *testing.T, item jsontext.Value) []string {
	t.Helper()
	var m map[string]jsontext.Value
	require.NoError(t, json.Unmarshal(item, &m))
	var typ, role string
	_ = json.Unmarshal(m["type"], &typ)
	_ = json.Unmarshal(m["role"], &role)
	if typ == "message" {
		var parts []struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(m["content"], &parts)
		var names []string
		for _, p := range parts {
			names = append(names, p.Type)
		}
		return []string{"message " + role + ": " + strings.Join(names, ", ")}
	}
	var members []string
	for k, v := range m {
		if k != "type" {
			members = append(members, k+" "+v.Kind().String())
		}
	}
	slices.Sort(members)
	shapes := []string{typ + ": " + strings.Join(members, " ")}
	var tools []jsontext.Value
	_ = json.Unmarshal(m["tools"], &tools)
	for _, tool := range tools {
		for _, s := range codexToolShapes(t, tool) {
			shapes = append(shapes, typ+" / "+s)
		}
	}
	return shapes
}
