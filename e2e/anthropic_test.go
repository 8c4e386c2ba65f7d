package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Anthropic's Messages API (docs/PROTOCOL.md 15) over plain HTTP, with the headers the
// official SDK and Claude Code send; the real clients are under the clients build tag.

const anthropicVersion = "2023-06-01"

// anPost posts body to path of g with the key in x-api-key and Anthropic's headers, plus
// headers (name, value pairs); it returns the answer read to its end.
func anPost(t testing.TB, g started, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.HTTP+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", testKey)
	req.Header.Set("Anthropic-Version", anthropicVersion)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// anMessage is the message object of an answer.
type anMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []jsontext.Value `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anUsage          `json:"usage"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// anBlock is a content block as the SDK reads it.
type anBlock struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	Thinking  string         `json:"thinking"`
	Signature string         `json:"signature"`
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Input     jsontext.Value `json:"input"`
}

func (m *anMessage) blocks(t testing.TB) []anBlock {
	t.Helper()
	out := make([]anBlock, len(m.Content))
	for i, c := range m.Content {
		require.NoError(t, json.Unmarshal(c, &out[i]))
	}
	return out
}

// anMessages is a unary call that must succeed.
func anMessages(t testing.TB, g started, body string, headers ...string) (*http.Response, anMessage) {
	t.Helper()
	resp, b := anPost(t, g, "/v1/messages", body, headers...)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var m anMessage
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return resp, m
}

// anError is Anthropic's error body.
type anError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// anRefusal is a call that must be refused with status, in Anthropic's error shape, with
// request-id.
func anRefusal(t testing.TB, resp *http.Response, body []byte, status int, typ string) anError {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, string(body))
	var e anError
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	assert.Equal(t, "error", e.Type)
	assert.Equal(t, typ, e.Error.Type, e.Error.Message)
	assert.NotEmpty(t, e.RequestID)
	assert.Equal(t, e.RequestID, resp.Header.Get("Request-Id"))
	return e
}

// anEvent is one server-sent event.
type anEvent struct {
	name string
	data map[string]any
}

// anEvents reads a stream's events, each event's name the type of its data, as the SDK
// requires.
func anEvents(t testing.TB, body []byte) []anEvent {
	t.Helper()
	var out []anEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var d map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &d), data)
		require.Equal(t, name, d["type"], "the event's name is its data's type")
		out = append(out, anEvent{name: name, data: d})
	}
	return out
}

// anStreamed is a stream's message put together as the SDK's MessageStream does: the
// start's message, each block from its start and its deltas, the stop reason and usage
// from message_delta.
func anStreamed(t testing.TB, events []anEvent) (m anMessage, names []string) {
	t.Helper()
	var blocks []map[string]any
	var partial []string
	for _, ev := range events {
		names = append(names, ev.name)
		switch ev.name {
		case "message_start":
			b, err := json.Marshal(ev.data["message"])
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &m))
		case "content_block_start":
			require.Equal(t, float64(len(blocks)), ev.data["index"], "blocks are numbered as they start")
			blocks = append(blocks, ev.data["content_block"].(map[string]any))
			partial = append(partial, "")
		case "content_block_delta":
			i := int(ev.data["index"].(float64))
			d := ev.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				blocks[i]["text"] = blocks[i]["text"].(string) + d["text"].(string)
			case "thinking_delta":
				blocks[i]["thinking"] = blocks[i]["thinking"].(string) + d["thinking"].(string)
			case "signature_delta":
				blocks[i]["signature"] = d["signature"]
			case "input_json_delta":
				partial[i] += d["partial_json"].(string)
			default:
				t.Fatalf("unknown delta %v", d)
			}
		case "message_delta":
			d := ev.data["delta"].(map[string]any)
			m.StopReason, _ = d["stop_reason"].(string)
			u := ev.data["usage"].(map[string]any)
			m.Usage.OutputTokens = int(u["output_tokens"].(float64))
			m.Usage.InputTokens = int(u["input_tokens"].(float64))
		}
	}
	for i, b := range blocks {
		if b["type"] == "tool_use" {
			b["input"] = jsontext.Value(partial[i])
		}
		v, err := json.Marshal(b)
		require.NoError(t, err)
		m.Content = append(m.Content, v)
	}
	return m, names
}

const anTools = `"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
	{"name":"get_forecast","description":"Forecast","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

// TestAnthropicMessages: a unary answer in Anthropic's shape, with the model the client
// named, request-id, and usage; keys in x-api-key or Authorization: Bearer.
func TestAnthropicMessages(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	body := `{"model":"` + testModel + `","max_tokens":256,"system":"Be brief.","messages":[{"role":"user","content":"Hello"}],
		"metadata":{"user_id":"u1"},"context_management":{"edits":[]}}`
	resp, m := anMessages(t, g, body, "Anthropic-Beta", "interleaved-thinking-2025-05-14,context-management-2025-06-27",
		"X-Claude-Code-Session-Id", "8d4e2c1a-session")
	assert.Equal(t, "msg_"+resp.Header.Get("X-Request-Id"), m.ID)
	assert.Equal(t, resp.Header.Get("X-Request-Id"), resp.Header.Get("Request-Id"))
	assert.Equal(t, "message", m.Type)
	assert.Equal(t, "assistant", m.Role)
	assert.Equal(t, testModel, m.Model)
	assert.Equal(t, "end_turn", m.StopReason)
	blocks := m.blocks(t)
	require.Len(t, blocks, 1)
	assert.Equal(t, "text", blocks[0].Type)
	assert.NotEmpty(t, blocks[0].Text)
	assert.Positive(t, m.Usage.InputTokens)
	assert.Positive(t, m.Usage.OutputTokens)
	assert.Equal(t, "context_management,anthropic-beta: context-management-2025-06-27", resp.Header.Get("X-Gateway-Dropped"),
		"what the surface and the translator dropped")
	assert.Equal(t, resp.Header.Get("X-Gateway-Dropped"), resp.Header.Get("X-Gateway-Ignored-Params"))

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 1)
	assert.Equal(t, []any{map[string]any{"text": "Be brief."}}, reqs[0]["system"])
	assert.Equal(t, map[string]any{"maxTokens": 256.0}, reqs[0]["inferenceConfig"])
	md := reqs[0]["requestMetadata"].(map[string]any)
	assert.Equal(t, "u1", md["user"])
	assert.Equal(t, "8d4e2c1a-session", md["cache_key"], "Claude Code's session is the prompt-cache key")
	assert.Equal(t, map[string]any{"anthropic_beta": []any{"interleaved-thinking-2025-05-14"}}, reqs[0]["additionalModelRequestFields"])

	// The same key as a bearer token.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.HTTP+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	r2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = r2.Body.Close()
	assert.Equal(t, http.StatusOK, r2.StatusCode)
	assert.InDelta(t, 2, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "anthropic", "route": "chat", "code": "ok"}), 0)
}

// TestAnthropicStream: the events of a streamed answer, in order, put together as the SDK
// does, and the stop reason and usage at the end.
func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	resp, b := anPost(t, g, "/v1/messages?beta=true", `{"model":"`+testModel+`","max_tokens":256,"stream":true,`+anTools+`,
		"messages":[{"role":"user","content":"What is the weather in Paris? Use get_weather."}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.NotEmpty(t, resp.Header.Get("Request-Id"))
	m, names := anStreamed(t, anEvents(t, b))
	names = slices.Compact(names) // a block's deltas counted once
	assert.Equal(t, []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}, names)
	assert.Equal(t, testModel, m.Model)
	assert.Equal(t, "tool_use", m.StopReason)
	blocks := m.blocks(t)
	require.Len(t, blocks, 2)
	assert.Equal(t, "text", blocks[0].Type)
	assert.Equal(t, "tool_use", blocks[1].Type)
	assert.Equal(t, "get_weather", blocks[1].Name)
	assert.JSONEq(t, `{"city":"example"}`, string(blocks[1].Input))
	assert.Positive(t, m.Usage.OutputTokens)
}

// TestAnthropicToolLoopWithThinking: a tool loop with thinking on, each turn's content
// sent back exactly as it came (the thinking block's text and signature byte for byte):
// Bedrock gets the reasoning back on every turn, so thinking stays on, and a block altered
// by the client is Bedrock's 400 in Anthropic's shape.
func TestAnthropicToolLoopWithThinking(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	const task = `{"role":"user","content":"Check the weather: call get_weather and then get_forecast."}`
	head := `{"model":"` + testModel + `","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},"tool_choice":{"type":"auto","disable_parallel_tool_use":true},` + anTools
	history := task
	var thinking anBlock
	for turn, stream := range []bool{false, true} {
		body := head + `,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,"messages":[` + history + `]}`
		var m anMessage
		var resp *http.Response
		if stream {
			var b []byte
			resp, b = anPost(t, g, "/v1/messages", body)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			m, _ = anStreamed(t, anEvents(t, b))
		} else {
			resp, m = anMessages(t, g, body)
		}
		assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"), "turn %d: thinking stays on", turn)
		require.Equal(t, "tool_use", m.StopReason, "turn %d", turn)
		blocks := m.blocks(t)
		require.Equal(t, "thinking", blocks[0].Type, "turn %d starts with its thinking", turn)
		require.NotEmpty(t, blocks[0].Signature)
		thinking = blocks[0]
		use := blocks[len(blocks)-1]
		require.Equal(t, "tool_use", use.Type)
		content, err := json.Marshal(m.Content)
		require.NoError(t, err)
		history += `,{"role":"assistant","content":` + string(content) + `},{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + use.ID + `","content":"21 C"}]}`
	}
	resp, m := anMessages(t, g, head+`,"messages":[`+history+`]}`)
	assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"))
	assert.Equal(t, "end_turn", m.StopReason)

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 3)
	last := reqs[2]["messages"].([]any)
	assistant := last[len(last)-2].(map[string]any)["content"].([]any)
	rt := assistant[0].(map[string]any)["reasoningContent"].(map[string]any)["reasoningText"].(map[string]any)
	assert.Equal(t, thinking.Thinking, rt["text"], "the thinking text, byte for byte")
	assert.Equal(t, thinking.Signature, rt["signature"], "the signature, byte for byte")

	tampered := strings.Replace(head+`,"messages":[`+history+`]}`, `"thinking":"`, `"thinking":"X`, 1)
	r, b := anPost(t, g, "/v1/messages", tampered)
	e := anRefusal(t, r, b, http.StatusBadRequest, "invalid_request_error")
	assert.Contains(t, e.Error.Message, "signature")
}

// TestAnthropicSplitParallelResults: the results of parallel calls sent in two user
// messages reach Bedrock as one turn answering both calls.
func TestAnthropicSplitParallelResults(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	anMessages(t, g, `{"model":"`+testModel+`","max_tokens":256,`+anTools+`,"messages":[
		{"role":"user","content":"Weather and forecast for Paris."},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_b","name":"get_forecast","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"21 C"}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"sunny","is_error":true},{"type":"text","text":"Summarize."}]}]}`)
	msgs := sim.converseRequests(t)[0]["messages"].([]any)
	require.Len(t, msgs, 3, "user, assistant, one user turn")
	results := msgs[2].(map[string]any)["content"].([]any)
	require.Len(t, results, 3)
	assert.Contains(t, results[0], "toolResult")
	second := results[1].(map[string]any)["toolResult"].(map[string]any)
	assert.Equal(t, "error", second["status"], "is_error is the result's status")
	assert.Equal(t, map[string]any{"text": "Summarize."}, results[2])
}

// TestAnthropicErrors: refusals in Anthropic's shape, naming the field in its dotted
// path, the translator's too; a missing key; a route for another method; a head too large.
func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	hi := `"messages":[{"role":"user","content":"hi"}]`

	r, b := anPost(t, g, "/v1/messages", `{"model":"`+testModel+`",`+hi+`}`)
	e := anRefusal(t, r, b, http.StatusBadRequest, "invalid_request_error")
	assert.Equal(t, "invalid request: max_tokens: field required", e.Error.Message)

	r, b = anPost(t, g, "/v1/messages", `{"model":"`+testModel+`","max_tokens":5,"messages":[{"role":"user","content":[
		{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`)
	e = anRefusal(t, r, b, http.StatusBadRequest, "invalid_request_error")
	assert.Contains(t, e.Error.Message, "messages.0.content.0.source: url sources are not fetched")

	// The translator's refusal of a chat-model path names the Anthropic block.
	r, b = anPost(t, g, "/v1/messages", `{"model":"`+testModel+`","max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`)
	e = anRefusal(t, r, b, http.StatusBadRequest, "invalid_request_error")
	assert.Equal(t, "invalid request: messages.1.content.1.id is empty", e.Error.Message)

	// Adaptive thinking's effort is the translator's reasoning effort, refused by its path.
	r, b = anPost(t, g, "/v1/messages", `{"model":"`+testModel+`","max_tokens":5,`+hi+`,"thinking":{"type":"adaptive"},"output_config":{"effort":"extreme"}}`)
	e = anRefusal(t, r, b, http.StatusBadRequest, "invalid_request_error")
	assert.True(t, strings.HasPrefix(e.Error.Message, `invalid request: output_config.effort "extreme" is not one of`), e.Error.Message)

	r, b = anPost(t, g, "/v1/messages", `{"model":"no-such-model","max_tokens":5,`+hi+`}`)
	anRefusal(t, r, b, http.StatusNotFound, "not_found_error")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.HTTP+"/v1/messages", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", "wrong")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	e = anRefusal(t, resp, b, http.StatusUnauthorized, "authentication_error")
	assert.Contains(t, e.Error.Message, "x-api-key")

	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+g.HTTP+"/v1/messages", nil)
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", testKey)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	anRefusal(t, resp, b, http.StatusMethodNotAllowed, "invalid_request_error")
	assert.Equal(t, "POST", resp.Header.Get("Allow"))

	// A head over the limit, answered before any handler runs, in the same shape.
	conn, err := net.Dial("tcp", g.HTTP)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 70<<10)+"\r\n\r\n")
	require.NoError(t, err)
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode, string(b))
	assert.Contains(t, string(b), `"type":"error","error":{"type":"invalid_request_error"`)
}

// TestAnthropicModels: GET /v1/models answers in Anthropic's shape to a request with
// anthropic-version, in OpenAI's to any other; and /v1/models/{id} likewise.
func TestAnthropicModels(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	get := func(path string, version bool) (*http.Response, []byte) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+g.HTTP+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Api-Key", testKey)
		if version {
			req.Header.Set("Anthropic-Version", anthropicVersion)
		} else {
			req.Header.Del("X-Api-Key")
			req.Header.Set("Authorization", "Bearer "+testKey)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		return resp, b
	}
	resp, b := get("/v1/models", true)
	var list struct {
		Data []struct {
			Type, ID, DisplayName, CreatedAt string
		} `json:"data"`
		HasMore bool   `json:"has_more"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
	}
	require.NoError(t, json.Unmarshal(b, &list, json.MatchCaseInsensitiveNames(true)), string(b))
	require.NotEmpty(t, list.Data)
	assert.Equal(t, "model", list.Data[0].Type)
	assert.Equal(t, testModel, list.Data[0].ID)
	assert.Contains(t, string(b), `"display_name":"`+testModel+`"`)
	assert.Contains(t, string(b), `"created_at":"20`)
	assert.False(t, list.HasMore)
	assert.Equal(t, list.Data[0].ID, list.FirstID)
	assert.Equal(t, list.Data[len(list.Data)-1].ID, list.LastID)
	assert.NotEmpty(t, resp.Header.Get("Request-Id"))

	_, b = get("/v1/models", false)
	assert.Contains(t, string(b), `"object":"list"`)

	_, b = get("/v1/models/"+testModel, true)
	assert.Contains(t, string(b), `{"type":"model","id":"`+testModel+`"`)
	_, b = get("/v1/models/"+testModel, false)
	assert.Contains(t, string(b), `"object":"model"`)
	_, b = get("/v1/models/claude-sonnet-4-5", true)
	assert.Contains(t, string(b), `{"type":"model","id":"claude-sonnet-4-5","display_name":"claude-sonnet-4-5"`, "an Anthropic name")
}

// claudeCodeRequest is the shape of the request Claude Code sends by default: system
// blocks with cache points, thinking with a budget one below max_tokens and a display,
// context_management, tools with one deferred and a server tool, the last user block with
// a cache point, metadata, a stream.
func claudeCodeRequest(model string) string {
	return `{"model":"` + model + `","max_tokens":32000,"stream":true,
		"system":[{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{"type":"ephemeral"}},
			{"type":"text","text":"Use the tools the user names.","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>Read, Bash and get_weather are available.</system-reminder>"},
			{"type":"text","text":"What is the weather in Paris? Use get_weather.","cache_control":{"type":"ephemeral"}}]}],
		"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
			{"name":"mcp__docs__search_the_documentation_of_the_project_for_a_query_string","description":"Search","input_schema":{"type":"object","properties":{"q":{"type":"string"}}},"defer_loading":true},
			{"type":"web_search_20250305","name":"web_search","max_uses":8}],
		"thinking":{"type":"enabled","budget_tokens":31999,"display":"summarized"},
		"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
		"metadata":{"user_id":"user_0a1b_account__session_5f6e"},"temperature":1}`
}

// TestAnthropicClaudeCodeDefaults: Claude Code's default request, on its default Claude
// models by their Anthropic names and on a model of another family, is one Bedrock (the
// simulator's validator) takes: what the model cannot have is dropped and listed; the
// answer names the model as the client did.
func TestAnthropicClaudeCodeDefaults(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	for _, model := range []string{"claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-1", "us.amazon.nova-pro-v1:0"} {
		resp, b := anPost(t, g, "/v1/messages?beta=true", claudeCodeRequest(model),
			"Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
			"X-Claude-Code-Session-Id", "5f6e")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", model, b)
		m, _ := anStreamed(t, anEvents(t, b))
		assert.Equal(t, model, m.Model)
		assert.Equal(t, "tool_use", m.StopReason, model)
		blocks := m.blocks(t)
		assert.Equal(t, "get_weather", blocks[len(blocks)-1].Name, model)
		dropped := resp.Header.Get("X-Gateway-Dropped")
		for _, d := range []string{"tools.1.defer_loading", "tools.2", "thinking.display", "context_management", "anthropic-beta: claude-code-20250219"} {
			assert.Contains(t, dropped, d, model)
		}
	}
	assert.InDelta(t, 4, metricValue(t, g, "gateway_params_dropped_total", map[string]string{"transport": "anthropic", "param": "tools.N.defer_loading"}), 0,
		"what was dropped is counted")
}

// TestAnthropicDroppedNamesTheBodysFields: what the translator drops is named in
// x-gateway-dropped and x-gateway-ignored-params by the Anthropic body's paths
// (stop_sequences.1), not the chat model's (stop[1]): unary, streamed, on count_tokens and
// on a stream that fails before its first event (a 529 the SDKs retry); what the surface
// itself dropped keeps its name (docs/PROTOCOL.md 15.1).
func TestAnthropicDroppedNamesTheBodysFields(t *testing.T) {
	t.Parallel()
	body := func(stream string) string {
		return `{"model":"` + testModel + `","max_tokens":64,"stream":` + stream + `,"stop_sequences":["END","\n\n"],
			"service_tier":"auto","messages":[{"role":"user","content":"Hello"}]}`
	}
	const want = "service_tier,stop_sequences.1"
	_, g := recordedGateway(t)
	for _, tt := range []struct{ name, path, body string }{
		{"unary", "/v1/messages", body("false")},
		{"stream", "/v1/messages", body("true")},
		{"count_tokens", "/v1/messages/count_tokens", body("false")},
	} {
		resp, b := anPost(t, g, tt.path, tt.body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tt.name, b)
		assert.Equal(t, want, resp.Header.Get("X-Gateway-Dropped"), tt.name)
		assert.Equal(t, want, resp.Header.Get("X-Gateway-Ignored-Params"), tt.name)
	}

	_, g = recordedGateway(t, "stream_exception,exception=serviceUnavailableException,after=1")
	resp, b := anPost(t, g, "/v1/messages", body("true"))
	anRefusal(t, resp, b, 529, "overloaded_error")
	assert.Equal(t, want, resp.Header.Get("X-Gateway-Dropped"), "a failure before the first event")
}

// TestTraceOfAnAnthropicCall: the server span of a Messages call carries Claude Code's
// session id (docs/PROTOCOL.md 15.1).
func TestTraceOfAnAnthropicCall(t *testing.T) {
	rcv := newHTTPReceiver(t)
	setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.endpoint})
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g, stop := startTraced(t, cfg)
	resp, b := anPost(t, g, "/v1/messages", `{"model":"`+testModel+`","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
		"X-Claude-Code-Session-Id", "5f6e-session")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	stop()
	srv := serverSpan(t, rcv.spans(), resp.Header.Get("Request-Id"))
	assert.Equal(t, "5f6e-session", srv.str("gateway.session_id"))
	assert.Equal(t, "/v1/messages", srv.str("http.route"))
}

// TestAnthropicCountTokens: count_tokens counts the request as it would be translated:
// Bedrock's count where the model has it, else an estimate that says it is one.
func TestAnthropicCountTokens(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	body := func(model string) string {
		return `{"model":"` + model + `","system":"Be brief.",` + anTools + `,"messages":[{"role":"user","content":"What is the weather in Paris?"}]}`
	}
	count := func(model string) (*http.Response, int) {
		resp, b := anPost(t, g, "/v1/messages/count_tokens", body(model))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		var c struct {
			InputTokens int `json:"input_tokens"`
		}
		require.NoError(t, json.Unmarshal(b, &c), string(b))
		require.Positive(t, c.InputTokens, string(b))
		assert.NotEmpty(t, resp.Header.Get("Request-Id"))
		return resp, c.InputTokens
	}
	resp, n := count("claude-sonnet-4-5")
	assert.Empty(t, resp.Header.Get("X-Gateway-Estimate"), "Claude Sonnet 4.5 has Bedrock's CountTokens")
	_, m := anMessages(t, g, `{"model":"claude-sonnet-4-5","max_tokens":64,`+body("claude-sonnet-4-5")[len(`{"model":"claude-sonnet-4-5",`):])
	// The simulator counts a quarter of the bytes of what it is given: the chat call's
	// Converse request also has its inferenceConfig.
	assert.InEpsilon(t, m.Usage.InputTokens, n, 0.25, "the count is about the input of the same request")

	resp, _ = count("us.meta.llama3-3-70b-instruct-v1:0")
	assert.Equal(t, "true", resp.Header.Get("X-Gateway-Estimate"))

	r, b := anPost(t, g, "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`)
	anRefusal(t, r, b, http.StatusBadRequest, "invalid_request_error")
	assert.InDelta(t, 2, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "anthropic", "route": "count_tokens", "code": "ok"}), 0)
}

// TestAnthropicFailures: a failure before the first event is a plain HTTP error the SDKs
// retry (Bedrock's throttling: 429 rate_limit_error with retry-after); one after it is an
// error event, the stream's last, without message_stop.
func TestAnthropicFailures(t *testing.T) {
	t.Parallel()
	body := `{"model":"` + testModel + `","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`

	_, g := recordedGateway(t, "throttle")
	r, b := anPost(t, g, "/v1/messages", body)
	anRefusal(t, r, b, http.StatusTooManyRequests, "rate_limit_error")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))

	_, g = recordedGateway(t, "stream_exception,exception=serviceUnavailableException,after=4")
	r, b = anPost(t, g, "/v1/messages", body)
	require.Equal(t, http.StatusOK, r.StatusCode, string(b))
	events := anEvents(t, b)
	require.NotEmpty(t, events)
	assert.Equal(t, "message_start", events[0].name)
	last := events[len(events)-1]
	require.Equal(t, "error", last.name, "the stream ends with its error")
	assert.Equal(t, "overloaded_error", last.data["error"].(map[string]any)["type"])
	assert.Equal(t, r.Header.Get("Request-Id"), last.data["request_id"])
	for _, ev := range events {
		assert.NotEqual(t, "message_stop", ev.name)
	}
}
