package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/config"
)

// Prompt caching end to end (docs/PROTOCOL.md 12): what each surface's request becomes in
// the Converse request the simulator received.

// cachePointsOf lists where a Converse request carries cachePoint blocks, in Bedrock's
// order, each with its ttl when it has one: "system.1 1h", "messages.2.content.1".
func cachePointsOf(req map[string]any) []string {
	var out []string
	walk := func(prefix string, list any) {
		items, _ := list.([]any)
		for i, it := range items {
			block, _ := it.(map[string]any)
			cp, ok := block["cachePoint"].(map[string]any)
			if !ok {
				continue
			}
			s := prefix + "." + strconv.Itoa(i)
			if ttl, ok := cp["ttl"].(string); ok {
				s += " " + ttl
			}
			out = append(out, s)
		}
	}
	if tc, ok := req["toolConfig"].(map[string]any); ok {
		walk("toolConfig.tools", tc["tools"])
	}
	walk("system", req["system"])
	msgs, _ := req["messages"].([]any)
	for i, m := range msgs {
		walk(fmt.Sprintf("messages.%d.content", i), m.(map[string]any)["content"])
	}
	return out
}

// chatAllSurfaces sends one Nirmata body as a Nirmata REST call, as an OpenAI call (the
// same JSON; the shapes are shared) and as a gRPC call, and requires each to succeed.
func chatAllSurfaces(t *testing.T, g started, body string) {
	t.Helper()
	for _, path := range []string{"/llm-apps/chat", "/v1/chat/completions"} {
		resp, answer := post(t, "http://"+g.HTTP+path, "Bearer "+testKey, body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, answer)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, body))
	require.NoError(t, err)
}

// hintedConversation has a cache_control hint in each place 12.1 names: a tool, a system
// text part, a user message, a tool message.
const hintedConversation = `{"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0","messages":[
	{"role":"system","content":[{"type":"text","text":"You are a policy assistant.","cache_control":{"type":"ephemeral","ttl":"1h"}},
		{"type":"text","text":"Be brief."}]},
	{"role":"user","content":"Require pod labels. Use save_policy.","cache_control":{"type":"ephemeral"}},
	{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"p.yaml\"}"}}]},
	{"role":"tool","tool_call_id":"call_1","content":"{\"saved\":true}","cache_control":{"type":"ephemeral","ttl":"5m"}}],
	"tools":[{"type":"function","function":{"name":"save_policy","description":"Save a policy",
		"parameters":{"type":"object","properties":{"filename":{"type":"string"}}}},"cache_control":{"type":"ephemeral","ttl":"1h"}}]}`

// TestCacheHintsOnEverySurface: the same hints on the Nirmata API, the OpenAI API and gRPC
// reach Bedrock as the same cachePoint blocks, each where 12.1 places it.
func TestCacheHintsOnEverySurface(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	g := start(t, defaultConfig(t), sim.upstream())
	chatAllSurfaces(t, g, hintedConversation)

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"toolConfig.tools.1 1h", "system.1 1h", "messages.0.content.1", "messages.2.content.1"}, cachePointsOf(reqs[0]))
	assert.Equal(t, []any{
		map[string]any{"text": "You are a policy assistant."},
		map[string]any{"cachePoint": map[string]any{"type": "default", "ttl": "1h"}},
		map[string]any{"text": "Be brief."},
	}, reqs[0]["system"])
	results := reqs[0]["messages"].([]any)[2].(map[string]any)["content"].([]any)
	assert.Equal(t, map[string]any{"cachePoint": map[string]any{"type": "default"}}, results[1], "a sibling after the toolResult, never inside it")
	assert.Equal(t, reqs[0], reqs[1], "OpenAI's surface sends what the Nirmata surface sends")
	assert.Equal(t, reqs[0], reqs[2], "gRPC sends what the Nirmata surface sends")
}

// TestCacheHintsNormalised: six hints reach Bedrock as the four 12.1's rule 4 keeps (the
// simulator refuses a fifth), unary and streamed, and the two dropped are named in
// x-gateway-ignored-params; on a model without prompt caching none goes.
func TestCacheHintsNormalised(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	g := start(t, defaultConfig(t), sim.upstream())
	eph := `"cache_control":{"type":"ephemeral"}`
	body := `{"messages":[
		{"role":"system","content":"S1",` + eph + `},{"role":"system","content":"S2",` + eph + `},
		{"role":"user","content":"u1",` + eph + `},{"role":"assistant","content":"a1",` + eph + `},
		{"role":"user","content":"u2",` + eph + `}],
		"tools":[{"type":"function","function":{"name":"f"},` + eph + `}]}`
	for _, query := range []string{"", "?stream=true"} {
		resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat"+query, "Bearer "+testKey, body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
		assert.Equal(t, "messages[0].cache_control,messages[2].cache_control", resp.Header.Get("X-Gateway-Ignored-Params"))
	}
	llama := strings.Replace(body, `{"messages"`, `{"model":"meta.llama3-1-70b-instruct-v1:0","messages"`, 1)
	resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, llama)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	assert.Equal(t, "tools[0].cache_control,messages[0].cache_control,messages[1].cache_control,messages[2].cache_control,messages[3].cache_control,messages[4].cache_control",
		resp.Header.Get("X-Gateway-Ignored-Params"))

	// Logged with counts only, at info: the gateway changed what the client asked for.
	dropped := func() []observer.LoggedEntry {
		return g.logs.FilterMessage("prompt cache points").FilterField(zap.Int("over_limit", 2)).AllUntimed()
	}
	require.Eventually(t, func() bool { return len(dropped()) == 2 }, 5*time.Second, 5*time.Millisecond, "unary and streamed")
	for _, e := range dropped() {
		assert.Equal(t, zapcore.InfoLevel, e.Level)
		assert.EqualValues(t, 6, e.ContextMap()["hints"])
		assert.EqualValues(t, 4, e.ContextMap()["sent"])
	}

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 3)
	want := []string{"toolConfig.tools.1", "system.2", "messages.1.content.1", "messages.2.content.1"}
	assert.Equal(t, want, cachePointsOf(reqs[0]))
	assert.Equal(t, want, cachePointsOf(reqs[1]), "streamed")
	assert.Empty(t, cachePointsOf(reqs[2]), "Llama has no prompt caching")
}

// TestCacheHintErrors: a hint the gateway cannot honour is refused on every surface with
// the same words, naming the field, before anything reaches Bedrock.
func TestCacheHintErrorsOnEverySurface(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	g := start(t, defaultConfig(t), sim.upstream())
	body := `{"messages":[{"role":"user","content":"hi","cache_control":{"type":"ephemeral","ttl":"2h"}}]}`
	const want = `invalid request: messages[0].cache_control.ttl "2h" is not one of "5m", "1h"`

	resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var nirmataErr errorBody
	require.NoError(t, json.Unmarshal(answer, &nirmataErr))
	assert.Equal(t, want, nirmataErr.Error)

	resp, answer = post(t, "http://"+g.HTTP+"/v1/chat/completions", "Bearer "+testKey, body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var openaiErr struct {
		Error struct{ Message, Type, Param, Code string }
	}
	require.NoError(t, json.Unmarshal(answer, &openaiErr))
	assert.Equal(t, want, openaiErr.Error.Message)
	assert.Equal(t, "messages[0].cache_control.ttl", openaiErr.Error.Param)
	assert.Equal(t, "unsupported_value", openaiErr.Error.Code)

	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, body))
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, want, status.Convert(err).Message())

	assert.Empty(t, sim.converseRequests(t))
}

// agentTurn is a Nirmata body of an agent with a long system prompt and tool description
// on model, after rounds tool rounds; extra is added to the body's members.
func agentTurn(model string, rounds int, extra string) string {
	system := strings.Repeat("You are a careful Kubernetes policy assistant. ", 100) // ~4,700 bytes
	description := strings.Repeat("Save a policy file under policies/. ", 140)       // ~5,000 bytes
	msgs := []string{`{"role":"system","content":"` + system + `"}`, `{"role":"user","content":"Require pod labels. Use save_policy."}`}
	for i := 1; i <= rounds; i++ {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			`{"role":"assistant","content":"","tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"save_policy","arguments":"{\"filename\":\"p`+strconv.Itoa(i)+`.yaml\"}"}}]}`,
			`{"role":"tool","tool_call_id":"`+id+`","content":"saved"}`)
	}
	return `{"model":"` + model + `","messages":[` + strings.Join(msgs, ",") + `],"tools":[{"type":"function","function":{"name":"save_policy",
		"description":"` + description + `","parameters":{"type":"object","properties":{"filename":{"type":"string"}}}}}]` + extra + `}`
}

// TestAutomaticCaching: by default an agent's requests carry the gateway's three points,
// after the tools, the system prompt and the newest message, the last moving with the
// history so they never add up; Nova gets none in the tools; prompt_cache_retention 24h
// gives them 1h where the model has it, and is listed where it does not.
func TestAutomaticCaching(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	g := start(t, defaultConfig(t), sim.upstream())
	const sonnet4, sonnet45, nova = "us.anthropic.claude-sonnet-4-20250514-v1:0", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us.amazon.nova-pro-v1:0"
	for rounds := 0; rounds < 3; rounds++ {
		resp, answer := post(t, "http://"+g.HTTP+"/v1/chat/completions", "Bearer "+testKey, agentTurn(sonnet4, rounds, ""))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	}
	resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentTurn(nova, 1, ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	resp, answer = post(t, "http://"+g.HTTP+"/v1/chat/completions", "Bearer "+testKey, agentTurn(sonnet45, 1, `,"prompt_cache_retention":"24h"`))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	assert.Empty(t, resp.Header.Get("X-Gateway-Ignored-Params"))
	resp, answer = post(t, "http://"+g.HTTP+"/v1/chat/completions", "Bearer "+testKey, agentTurn(sonnet4, 1, `,"prompt_cache_retention":"24h"`))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	assert.Equal(t, "prompt_cache_retention", resp.Header.Get("X-Gateway-Ignored-Params"), "Sonnet 4 has no 1h TTL")

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 6)
	assert.Equal(t, []string{"toolConfig.tools.1", "system.1", "messages.0.content.1"}, cachePointsOf(reqs[0]))
	assert.Equal(t, []string{"toolConfig.tools.1", "system.1", "messages.2.content.1"}, cachePointsOf(reqs[1]))
	assert.Equal(t, []string{"toolConfig.tools.1", "system.1", "messages.4.content.1"}, cachePointsOf(reqs[2]))
	assert.Equal(t, []string{"system.1", "messages.2.content.1"}, cachePointsOf(reqs[3]), "Nova")
	assert.Equal(t, []string{"toolConfig.tools.1 1h", "system.1 1h", "messages.2.content.1 1h"}, cachePointsOf(reqs[4]))
	assert.Equal(t, []string{"toolConfig.tools.1", "system.1", "messages.2.content.1"}, cachePointsOf(reqs[5]))
}

// TestAliasDefaults: a model_aliases object in the YAML file gives its alias prompt_caching,
// parallel_tool_calls and max_tool_rounds defaults, over the gateway's and under the
// request's own values (docs/PROTOCOL.md 14.1); string aliases keep the gateway's.
func TestAliasDefaults(t *testing.T) {
	t.Parallel()
	sim := recordSim(t)
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`prompt_caching: off
model_aliases:
  plain: us.anthropic.claude-sonnet-4-20250514-v1:0
  cached:
    targets: [{model_id: us.anthropic.claude-sonnet-4-20250514-v1:0}]
    prompt_caching: auto
  agent:
    targets:
      - model_id: us.anthropic.claude-sonnet-4-20250514-v1:0
    parallel_tool_calls: false
    max_tool_rounds: 2
`), 0o600))
	cfg, err := config.Load([]string{"--config", file}, func(string) string { return "" })
	require.NoError(t, err)
	g := start(t, cfg, sim.upstream())

	for _, tt := range []struct{ model, extra, budget string }{
		{"plain", "", ""},
		{"cached", "", ""},
		{"agent", "", ""},
		{"agent", `,"parallel_tool_calls":true,"max_tool_rounds":5`, ""},
	} {
		resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentTurn(tt.model, 1, tt.extra))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
		assert.Empty(t, resp.Header.Get("X-Gateway-Tool-Budget"), tt.model)
	}
	resp, answer := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentTurn("agent", 2, ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(answer))
	assert.Equal(t, "exhausted", resp.Header.Get("X-Gateway-Tool-Budget"), "the alias's max_tool_rounds")

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 5)
	assert.Empty(t, cachePointsOf(reqs[0]), "prompt_caching: off for the gateway")
	assert.Equal(t, []string{"toolConfig.tools.1", "system.1", "messages.2.content.1"}, cachePointsOf(reqs[1]), "the alias's prompt_caching: auto")
	assert.Nil(t, reqs[0]["additionalModelRequestFields"])
	assert.Equal(t, map[string]any{"tool_choice": map[string]any{"type": "auto", "disable_parallel_tool_use": true}},
		reqs[2]["additionalModelRequestFields"], "the alias's parallel_tool_calls: false")
	assert.Nil(t, reqs[3]["additionalModelRequestFields"], "the request's parallel_tool_calls wins")
	system := reqs[4]["system"].([]any)
	assert.Contains(t, system[1].(map[string]any)["text"], "The tool budget for this task is used up.", "the alias's budget is spent")
}
