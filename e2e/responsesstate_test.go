package e2e

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/config"
	"github.com/nirmata/llm-gateway/internal/redistest"
)

// The Responses API's state (docs/PROTOCOL.md 16): reasoning sealed into encrypted_content
// and handed back by a stateless client, as Codex does, and stored responses chained with
// previous_response_id, each visible to its own key only. The reasoning cache is off in
// these tests, so that only the sealed value or the store can carry Claude's signed
// blocks back to Bedrock, which the simulator checks as Bedrock does (BEDROCK.md G7, G8).

// sealKey is a reasoning_seal_keys value the tests share between gateways.
const sealKey = "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA="

// stateConfig is the configuration of a gateway with the reasoning cache off and
// otherKey beside testKey.
func stateConfig(t *testing.T) config.Config {
	cfg := defaultConfig(t)
	cfg.ReasoningCache.MaxEntries = 0
	cfg.APIKeys = []string{otherKey}
	return cfg
}

// rsThinking asks for Claude's reasoning and its sealed blocks.
const rsThinking = `,"reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"]`

// rsTurn is one turn, unary or streamed, with key, that must succeed: the answer and the
// response as JSON (a stream's, from response.completed), with every member kept so its
// items can go back as they came.
func rsTurn(t *testing.T, g started, key string, streamed bool, body string) (*http.Response, map[string]any) {
	t.Helper()
	if streamed {
		body = strings.Replace(body, "{", `{"stream":true,`, 1)
	}
	resp, b := rsPost(t, g, key, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	data := b
	if streamed {
		frames := strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
		last := frames[len(frames)-1]
		require.True(t, strings.HasPrefix(last, "event: response.completed\n"), last)
		var ev struct {
			Response jsontext.Value `json:"response"`
		}
		require.NoError(t, json.Unmarshal([]byte(strings.SplitN(last, "data: ", 2)[1]), &ev))
		data = ev.Response
		for _, f := range frames {
			if strings.HasPrefix(f, "event: response.output_item.done\n") && strings.Contains(f, `"type":"reasoning"`) {
				assert.Equal(t, strings.Contains(body, "reasoning.encrypted_content"), strings.Contains(f, `"encrypted_content":"`),
					"output_item.done carries the sealed blocks when include asks for them")
			}
		}
	}
	var r map[string]any
	require.NoError(t, json.Unmarshal(data, &r), string(data))
	return resp, r
}

// outputOf is a response's output items, and the call_id of its one function call.
func outputOf(t *testing.T, r map[string]any) (items []any, callID string) {
	t.Helper()
	items = r["output"].([]any)
	for _, it := range items {
		if m := it.(map[string]any); m["type"] == "function_call" {
			require.Empty(t, callID, "one call")
			callID = m["call_id"].(string)
		}
	}
	require.NotEmpty(t, callID, "a function call in %v", items)
	return items, callID
}

// reasoningOf is a response's reasoning item.
func reasoningOf(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	for _, it := range r["output"].([]any) {
		if m := it.(map[string]any); m["type"] == "reasoning" {
			return m
		}
	}
	t.Fatalf("no reasoning item in %v", r["output"])
	return nil
}

// TestResponsesEncryptedReasoningStateless: a tool loop with thinking on and store false,
// the whole history sent back each turn with the reasoning items as they came (Codex's
// way): Bedrock gets the turn's signed block back byte for byte from encrypted_content, and
// thinking stays on, unary and streamed. Without encrypted_content thinking is turned off
// for that turn, which is what the sealing prevents.
func TestResponsesEncryptedReasoningStateless(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		sim := recordSim(t)
		g := start(t, stateConfig(t), sim.upstream())
		input := []any{rsUser("Call get_weather for Oslo.")}
		_, r := rsTurn(t, g, testKey, streamed, rsBody(t, rsThinking, input, rsWeatherTools))
		items, callID := outputOf(t, r)
		rs := reasoningOf(t, r)
		sealed, _ := rs["encrypted_content"].(string)
		require.NotEmpty(t, sealed, "stream %v", streamed)
		summary := rs["summary"].([]any)[0].(map[string]any)["text"].(string)
		assert.NotContains(t, sealed, summary[:min(len(summary), 12)], "the blocks are not readable")
		rs["content"] = nil // as Codex sends it back

		input = append(append(input, items...), rsOutput("function_call_output", callID, "sunny"))
		resp, _ := rsTurn(t, g, testKey, streamed, rsBody(t, rsThinking, input, rsWeatherTools))
		assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"), "thinking stays on, nothing to restore")
		assert.Empty(t, resp.Header.Get("X-Gateway-Ignored-Params"), "the reasoning item was used")
		history := sim.converseRequests(t)[1]["messages"].([]any)
		block := blockOf(t, history[1], "reasoningContent")["reasoningText"].(map[string]any)
		assert.Equal(t, summary, block["text"], "Bedrock got the block back")
		assert.NotEmpty(t, block["signature"])
		_, hasThinking := sim.converseRequests(t)[1]["additionalModelRequestFields"].(map[string]any)["thinking"]
		assert.True(t, hasThinking, "thinking on for the tool-result turn")

		delete(rs, "encrypted_content")
		resp, _ = rsTurn(t, g, testKey, streamed, rsBody(t, rsThinking, input, rsWeatherTools))
		assert.Equal(t, "disabled-missing-signature", resp.Header.Get("X-Gateway-Thinking"), "without it, the reasoning cache being off")
	}
}

// TestResponsesEncryptedReasoningRefused: a value changed by one byte, one sealed for
// another key, one sealed by another gateway's key and one that is no sealed value are
// 400s naming the item, and nothing reaches Bedrock.
func TestResponsesEncryptedReasoningRefused(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	cfg := stateConfig(t)
	cfg.ReasoningSealKeys = []string{sealKey}
	g := start(t, cfg, sim.upstream())
	other := start(t, stateConfig(t), sim.upstream()) // a random key of its own
	input := []any{rsUser("Call get_weather for Oslo.")}
	_, r := rsTurn(t, g, testKey, false, rsBody(t, rsThinking, input, rsWeatherTools))
	items, callID := outputOf(t, r)
	rs := reasoningOf(t, r)
	sealed := rs["encrypted_content"].(string)
	input = append(append(input, items...), rsOutput("function_call_output", callID, "sunny"))
	before := len(sim.converseRequests(t))

	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	require.NoError(t, err)
	raw[len(raw)/2] ^= 1
	for _, tt := range []struct {
		name, value, key string
		g                started
		msg              string
	}{
		{"changed", base64.RawURLEncoding.EncodeToString(raw), testKey, g, "does not open"},
		{"another key's", sealed, otherKey, g, "does not open"},
		{"another gateway's", sealed, testKey, other, "sealed with a key this gateway does not hold"},
		{"not sealed", "gAAAAABoOpenAIStyle", testKey, g, "was not sealed by this gateway"},
	} {
		rs["encrypted_content"] = tt.value
		resp, b := rsPost(t, tt.g, tt.key, rsBody(t, rsThinking, input, rsWeatherTools))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", tt.name, b)
		e := rsErrorOf(t, b)
		assert.Equal(t, "input[1].encrypted_content", e.Param, tt.name)
		assert.Equal(t, "invalid_value", e.Code, tt.name)
		assert.Contains(t, e.Message, tt.msg, tt.name)
	}
	assert.Len(t, sim.converseRequests(t), before, "no refused value reached Bedrock")
}

// rsDo sends method to path on g with key and returns the status and body.
func rsDo(t *testing.T, g started, key, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+g.HTTP+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestResponsesPreviousResponseID: a stored tool turn with thinking on is continued by
// previous_response_id and the tool's output alone: Bedrock gets the whole conversation,
// the signed block restored from the store, thinking on; the response, its input items
// (listed, paged and ordered as OpenAI lists them) and its deletion are its key's alone:
// to another key each is a 404 like an unknown id's, and the response stays.
func TestResponsesPreviousResponseID(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		sim := recordSim(t)
		g := start(t, stateConfig(t), sim.upstream())
		const reasoning = `,"reasoning":{"effort":"low","summary":"auto"},"store":true`
		body := rsBody(t, reasoning, []any{rsUser("Call get_weather for Oslo.")}, rsWeatherTools)
		_, first := rsTurn(t, g, testKey, streamed, body)
		assert.Equal(t, true, first["store"])
		assert.NotContains(t, reasoningOf(t, first), "encrypted_content", "not asked for")
		_, callID := outputOf(t, first)
		id := first["id"].(string)

		next := rsBody(t, `,"previous_response_id":"`+id+`"`+reasoning, []any{rsOutput("function_call_output", callID, "sunny")}, rsWeatherTools)
		resp, second := rsTurn(t, g, testKey, streamed, next)
		assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"), "thinking on, the block from the store")
		assert.Equal(t, id, second["previous_response_id"])
		history := sim.converseRequests(t)[1]["messages"].([]any)
		require.Len(t, history, 3, "the user's message, the call, its output")
		assert.NotEmpty(t, blockOf(t, history[1], "reasoningContent")["reasoningText"].(map[string]any)["signature"])

		status, b := rsDo(t, g, testKey, http.MethodGet, "/v1/responses/"+id)
		require.Equal(t, http.StatusOK, status, string(b))
		var got map[string]any
		require.NoError(t, json.Unmarshal(b, &got))
		assert.Equal(t, first, got, "the response as it was answered")

		status, b = rsDo(t, g, testKey, http.MethodGet, "/v1/responses/"+second["id"].(string)+"/input_items?order=asc&limit=2")
		require.Equal(t, http.StatusOK, status, string(b))
		var list struct {
			Object  string           `json:"object"`
			Data    []map[string]any `json:"data"`
			FirstID string           `json:"first_id"`
			LastID  string           `json:"last_id"`
			HasMore bool             `json:"has_more"`
		}
		require.NoError(t, json.Unmarshal(b, &list))
		assert.Equal(t, "list", list.Object)
		require.Len(t, list.Data, 2)
		assert.True(t, list.HasMore, "the user's message, the reasoning, the answer, the call, its output")
		assert.Equal(t, "message", list.Data[0]["type"])
		assert.Equal(t, "reasoning", list.Data[1]["type"])
		assert.Equal(t, list.Data[0]["id"], list.FirstID)
		assert.Equal(t, list.Data[1]["id"], list.LastID)
		status, b = rsDo(t, g, testKey, http.MethodGet, "/v1/responses/"+second["id"].(string)+"/input_items?after="+list.LastID+"&order=asc")
		require.Equal(t, http.StatusOK, status, string(b))
		require.NoError(t, json.Unmarshal(b, &list))
		require.Len(t, list.Data, 3)
		assert.Equal(t, []any{"message", "function_call", "function_call_output"},
			[]any{list.Data[0]["type"], list.Data[1]["type"], list.Data[2]["type"]}, "the assistant's text, its call, the output")
		assert.False(t, list.HasMore)
		status, b = rsDo(t, g, testKey, http.MethodGet, "/v1/responses/"+second["id"].(string)+"/input_items")
		require.Equal(t, http.StatusOK, status, string(b))
		require.NoError(t, json.Unmarshal(b, &list))
		assert.Equal(t, "function_call_output", list.Data[0]["type"], "desc by default")

		// Another key: every route is a 404 as for an unknown id, and nothing is deleted.
		unknown := rsErrorOf(t, func() []byte { _, b := rsDo(t, g, otherKey, http.MethodGet, "/v1/responses/resp_unknown"); return b }())
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/v1/responses/" + id}, {http.MethodGet, "/v1/responses/" + id + "/input_items"}, {http.MethodDelete, "/v1/responses/" + id},
		} {
			status, b := rsDo(t, g, otherKey, r.method, r.path)
			require.Equal(t, http.StatusNotFound, status, string(b))
			e := rsErrorOf(t, b)
			assert.Equal(t, "not_found", e.Code)
			assert.Equal(t, strings.ReplaceAll(unknown.Message, "resp_unknown", id), e.Message, "the same answer as an unknown id's")
		}
		resp, b = rsPost(t, g, otherKey, next)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, string(b))
		assert.Equal(t, "previous_response_id", rsErrorOf(t, b).Param)
		assert.Contains(t, rsErrorOf(t, b).Message, `"`+id+`"`)

		status, b = rsDo(t, g, testKey, http.MethodDelete, "/v1/responses/"+id)
		require.Equal(t, http.StatusOK, status, string(b))
		assert.JSONEq(t, `{"id":"`+id+`","object":"response.deleted","deleted":true}`, string(b))
		status, _ = rsDo(t, g, testKey, http.MethodGet, "/v1/responses/"+id)
		assert.Equal(t, http.StatusNotFound, status, "deleted")
	}
}

// TestResponsesItemReference: an item_reference to a stored response's function call is
// that call, for the key that stored it.
func TestResponsesItemReference(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	g := start(t, stateConfig(t), sim.upstream())
	_, first := rsTurn(t, g, testKey, false, rsBody(t, `,"store":true`, []any{rsUser("Call get_weather for Oslo.")}, rsWeatherTools))
	items, callID := outputOf(t, first)
	var ref string
	for _, it := range items {
		if m := it.(map[string]any); m["type"] == "function_call" {
			ref = m["id"].(string)
		}
	}
	input := []any{rsUser("Call get_weather for Oslo."), map[string]any{"type": "item_reference", "id": ref}, rsOutput("function_call_output", callID, "sunny")}
	rsTurn(t, g, testKey, false, rsBody(t, "", input, rsWeatherTools))
	history := sim.converseRequests(t)[1]["messages"].([]any)
	require.Len(t, history, 3)
	assert.Equal(t, callID, blockOf(t, history[1], "toolUse")["toolUseId"])

	resp, b := rsPost(t, g, otherKey, rsBody(t, "", input, rsWeatherTools))
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(b))
	assert.Equal(t, "input[1]", rsErrorOf(t, b).Param)
}

// TestResponsesNotStored: a response over responses_max_bytes is answered with store
// false and x-gateway-not-stored (a stream's response.completed says store false), and
// is not found afterwards.
func TestResponsesNotStored(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	cfg := stateConfig(t)
	cfg.ResponsesMaxBytes = 64
	g := start(t, cfg, sim.upstream())
	for _, streamed := range []bool{false, true} {
		resp, r := rsTurn(t, g, testKey, streamed, `{"model":"`+testModel+`","input":"Say hello."}`)
		assert.Equal(t, false, r["store"], "stream %v", streamed)
		if !streamed {
			assert.Equal(t, "too_large", resp.Header.Get("X-Gateway-Not-Stored"))
		}
		status, _ := rsDo(t, g, testKey, http.MethodGet, "/v1/responses/"+r["id"].(string))
		assert.Equal(t, http.StatusNotFound, status)
	}
}

// TestResponsesStateAcrossReplicas: two gateways sharing a Redis and a reasoning_seal_keys
// value serve one conversation: the second continues the first's stored response with
// previous_response_id, and opens the reasoning the first sealed for a stateless client,
// thinking on each time.
func TestResponsesStateAcrossReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sim := recordSim(t)
	cfg := stateConfig(t)
	cfg.ReasoningSealKeys = []string{sealKey}
	onRedis(&cfg, srv.URL())
	a, b := start(t, cfg, sim.upstream()), start(t, cfg, sim.upstream())

	input := []any{rsUser("Call get_weather for Oslo.")}
	_, first := rsTurn(t, a, testKey, false, rsBody(t, rsThinking+`,"store":true`, input, rsWeatherTools))
	items, callID := outputOf(t, first)
	output := rsOutput("function_call_output", callID, "sunny")

	resp, second := rsTurn(t, b, testKey, false, rsBody(t, `,"previous_response_id":"`+first["id"].(string)+`"`+rsThinking, []any{output}, rsWeatherTools))
	assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"), "the other replica's stored block")
	assert.NotEmpty(t, second["output"])

	resp, _ = rsTurn(t, b, testKey, true, rsBody(t, rsThinking, append(append(input, items...), output), rsWeatherTools))
	assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"), "the other replica's sealed block")
	for _, req := range sim.converseRequests(t)[1:] {
		assert.NotEmpty(t, blockOf(t, req["messages"].([]any)[1], "reasoningContent")["reasoningText"].(map[string]any)["signature"])
	}
	status, _ := rsDo(t, a, otherKey, http.MethodGet, "/v1/responses/"+first["id"].(string))
	assert.Equal(t, http.StatusNotFound, status, "another key, on the replica that stored it")
}
