package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/config"
)

// codexBodies are the request bodies of a capture in testdata/codex (README.md there).
func codexBodies(t *testing.T, file string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "codex", file))
	require.NoError(t, err)
	var reqs []struct {
		Body map[string]any `json:"body"`
	}
	require.NoError(t, json.Unmarshal(b, &reqs))
	out := make([]map[string]any, len(reqs))
	for i, r := range reqs {
		out[i] = r.Body
	}
	return out
}

// codexReplay sends a capture's requests through g in order, streamed as Codex sends them,
// and returns each answer's output items. A later request's history is the one Codex
// would send this gateway: the items of the capture server's answer are replaced by this
// gateway's answer, as Codex sends back what it got, and the tool outputs answer this
// gateway's call ids; all else is as captured.
func codexReplay(t *testing.T, g started, bodies []map[string]any) [][]rsItem {
	t.Helper()
	var sent, answer []any
	var calls []string // the call ids of the gateway's last answer, in order
	prev := 0          // the captured items of the request before
	out := make([][]rsItem, len(bodies))
	for k, body := range bodies {
		captured := body["input"].([]any)
		if k > 0 {
			input := append(append([]any{}, sent...), answer...)
			n := 0
			for _, v := range captured[prev:] {
				it := v.(map[string]any)
				switch {
				case it["type"] == "reasoning" || it["type"] == "function_call" || it["type"] == "message" && it["role"] == "assistant":
					continue // the capture server's answer
				case it["type"] == "function_call_output":
					require.Less(t, n, len(calls), "a tool output for each call of the answer")
					it["call_id"], n = calls[n], n+1
				}
				input = append(input, it)
			}
			body["input"] = input
		}
		prev, sent = len(captured), body["input"].([]any)
		b, err := json.Marshal(body)
		require.NoError(t, err)
		resp, raw := rsPost(t, g, testKey, string(b))
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", k, raw)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		frames := strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n")
		_, data, ok := strings.Cut(frames[len(frames)-1], "\ndata: ")
		require.True(t, ok, frames[len(frames)-1])
		var last struct {
			Type     string `json:"type"`
			Response struct {
				Status string           `json:"status"`
				Output []jsontext.Value `json:"output"`
			} `json:"response"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &last), data)
		require.Equal(t, "response.completed", last.Type, "request %d", k)
		answer, calls = nil, nil
		for _, raw := range last.Response.Output {
			var it rsItem
			require.NoError(t, json.Unmarshal(raw, &it), string(raw))
			var item any // sent back whole, as Codex does
			require.NoError(t, json.Unmarshal(raw, &item))
			answer = append(answer, item)
			out[k] = append(out[k], it)
			if it.Type == "function_call" {
				calls = append(calls, it.CallID)
			}
		}
	}
	return out
}

// codexExec is the cmd of the one exec_command call among items.
func codexExec(t *testing.T, items []rsItem) string {
	t.Helper()
	var cmds []string
	for _, it := range items {
		if it.Type == "function_call" {
			require.Equal(t, "exec_command", it.Name)
			var args struct {
				Cmd string `json:"cmd"`
			}
			require.NoError(t, json.Unmarshal([]byte(it.Arguments), &args), it.Arguments)
			cmds = append(cmds, args.Cmd)
		}
	}
	require.Len(t, cmds, 1, "one exec_command call in %v", items)
	return cmds[0]
}

// codexText is the text of the one message among items, which calls nothing.
func codexText(t *testing.T, items []rsItem) string {
	t.Helper()
	var texts []string
	for _, it := range items {
		require.NotEqual(t, "function_call", it.Type, "no call in %v", items)
		if it.Type == "message" {
			texts = append(texts, it.text(t))
		}
	}
	require.Len(t, texts, 1, "one message in %v", items)
	return texts[0]
}

// TestCodexToolFormsReplayed replays the requests Codex 0.169.0 sent on the two model
// setups whose tools come in forms of their own (testdata/codex), over plain HTTP on the
// simulator, through aliases named as Codex names its models: on gpt-5.5 a client-run
// tool_search (offered to Bedrock as a function) and a hosted web_search with
// search_content_types (dropped), a two-turn tool loop; on its default model no tools
// member but an additional_tools item of namespaces, whose tools reach Bedrock flattened.
func TestCodexToolFormsReplayed(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	cfg := defaultConfig(t)
	cfg.ModelAliases = map[string][]config.Target{"gpt-5.5": {{ModelID: sonnet45}}, "gpt-6.1-sol": {{ModelID: sonnet45}}}
	g := start(t, cfg, sim.upstream())
	offered := func(req map[string]any) []string {
		var names []string
		for _, tool := range req["toolConfig"].(map[string]any)["tools"].([]any) {
			if spec, ok := tool.(map[string]any)["toolSpec"].(map[string]any); ok {
				names = append(names, spec["name"].(string))
			}
		}
		return names
	}

	t.Run("gpt-5.5", func(t *testing.T) {
		bodies := codexBodies(t, "gpt-5.5-tool-loop.json")
		require.Equal(t, "gpt-5.5", bodies[0]["model"])
		out := codexReplay(t, g, bodies)
		assert.Equal(t, "echo first > notes.txt", codexExec(t, out[0]))
		assert.Contains(t, codexText(t, out[1]), "exec_command", "the tool's output quoted back")
		assert.Equal(t, "mv notes.txt done.txt", codexExec(t, out[2]))
		assert.NotEmpty(t, codexText(t, out[3]))
		reqs := sim.converseRequests(t)
		require.Len(t, reqs, 4)
		assert.Equal(t, []string{"exec_command", "write_stdin", "request_user_input", "apply_patch", "view_image",
			"get_goal", "create_goal", "update_goal", "tool_search"}, offered(reqs[0]), "tool_search a function, web_search dropped")
	})

	t.Run("default model", func(t *testing.T) {
		bodies := codexBodies(t, "default-model.json")
		require.Equal(t, "gpt-6.1-sol", bodies[0]["model"])
		require.NotContains(t, bodies[0], "tools")
		before := len(sim.converseRequests(t))
		out := codexReplay(t, g, bodies)
		assert.NotEmpty(t, codexText(t, out[0]))
		reqs := sim.converseRequests(t)
		require.Len(t, reqs, before+1)
		assert.Equal(t, []string{"functions__exec", "functions__wait", "functions__request_user_input", "functions__request_user_input_async",
			"clock__sleep", "collaboration__followup_task", "collaboration__interrupt_agent", "collaboration__list_agents",
			"collaboration__send_message", "collaboration__spawn_agent", "collaboration__wait_agent"}, offered(reqs[before]),
			"the additional_tools item's tools, flattened, in order")
	})
}
