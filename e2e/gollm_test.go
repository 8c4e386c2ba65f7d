package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/config"
)

// The types below reproduce what the gollm library's Nirmata provider puts on the wire:
// content omitted when empty, tools in the flat {name, description, parameters} form,
// tool_choice "auto", ?model=…&provider=bedrock, Authorization: NIRMATA-API <key>, and a
// tool result sent as the JSON encoding of the tool's result object.
type gollmMessage struct {
	Role       string          `json:"role"`
	Content    string          `json:"content,omitempty"`
	ToolCalls  []gollmToolCall `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type gollmToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type gollmTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

type gollmRequest struct {
	Messages   []gollmMessage `json:"messages"`
	Tools      []gollmTool    `json:"tools,omitempty"`
	ToolChoice any            `json:"tool_choice,omitempty"`
	Model      string         `json:"model,omitempty"`
	Stream     bool           `json:"stream,omitempty"`
}

type gollmResponse struct {
	Message   string          `json:"message"`
	ToolCalls []gollmToolCall `json:"tool_calls,omitempty"`
}

// gollmChat keeps history the way the provider's non-streaming Send does: the user (or
// tool) message, then one assistant message holding the answer's text and tool calls.
type gollmChat struct {
	t       *testing.T
	base    string
	history []gollmMessage
	tools   []gollmTool
}

func (c *gollmChat) send(msg gollmMessage) gollmResponse {
	c.t.Helper()
	req := gollmRequest{Messages: append(append([]gollmMessage{}, c.history...), msg), Model: testModel, Tools: c.tools, ToolChoice: "auto"}
	body, err := json.Marshal(req)
	require.NoError(c.t, err)
	u := c.base + "/llm-apps/chat?" + url.Values{"model": {testModel}, "provider": {"bedrock"}, "client_type": {"NCH"}}.Encode()
	httpReq, err := http.NewRequestWithContext(c.t.Context(), http.MethodPost, u, bytes.NewReader(body))
	require.NoError(c.t, err)
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Authorization", "NIRMATA-API "+testKey)
	resp, err := http.DefaultClient.Do(httpReq)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, "request %s\nanswer %s", body, raw)
	var out gollmResponse
	require.NoError(c.t, json.Unmarshal(raw, &out))
	c.history = append(c.history, msg, gollmMessage{Role: "assistant", Content: out.Message, ToolCalls: out.ToolCalls})
	return out
}

// toolResult is what the provider sends for a FunctionCallResult: only the first result
// of a Send, as role "tool".
func toolResult(t *testing.T, id string, result map[string]any) gollmMessage {
	b, err := json.Marshal(result)
	require.NoError(t, err)
	return gollmMessage{Role: "tool", ToolCallID: id, Content: string(b)}
}

func TestGollmNirmataClientConversation(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	g := start(t, cfg)
	chat := &gollmChat{
		t:       t,
		base:    "http://" + g.HTTP,
		history: []gollmMessage{{Role: "system", Content: "You are a Kyverno policy assistant."}},
		tools: []gollmTool{
			{Name: "generate_policy", Description: "Generate a policy", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"kind": map[string]any{"type": "string"}, "replicas": map[string]any{"type": "integer"}}, "required": []any{"kind"},
			}},
			{Name: "save_policy", Description: "Save a policy to a file", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"filename": map[string]any{"type": "string"}}, "required": []any{"filename"},
			}},
			{Name: "list_files", Description: "List files", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}},
		},
	}

	// Turn 1: one tool call; the assistant message in history carries text and the call.
	r := chat.send(gollmMessage{Role: "user", Content: "Require pod labels, then use save_policy."})
	require.Len(t, r.ToolCalls, 1)
	assert.Equal(t, "save_policy", r.ToolCalls[0].Function.Name)
	assert.NotEmpty(t, r.Message)

	// Turn 2: the tool result comes back; the model answers in text quoting it.
	r = chat.send(toolResult(t, r.ToolCalls[0].ID, map[string]any{"saved": true, "path": "policies/require-labels.yaml"}))
	assert.Empty(t, r.ToolCalls)
	assert.Contains(t, r.Message, "require-labels.yaml")

	// Turn 3: two parallel calls. The provider answers only the first of them; the gateway
	// must still send Bedrock a result for the second, and, the client having shown it
	// answers only one call, turns parallel calls off: the model asks for list_files again,
	// alone, which the provider does answer.
	r = chat.send(gollmMessage{Role: "user", Content: "Run generate_policy and list_files."})
	require.Len(t, r.ToolCalls, 2)
	first, second := r.ToolCalls[0], r.ToolCalls[1]
	assert.Equal(t, "generate_policy", first.Function.Name)
	assert.Equal(t, "list_files", second.Function.Name)
	assert.JSONEq(t, "{}", second.Function.Arguments)
	r = chat.send(toolResult(t, first.ID, map[string]any{"policy": "apiVersion: kyverno.io/v1"}))
	require.Len(t, r.ToolCalls, 1, "one call per turn from now on")
	assert.Equal(t, "list_files", r.ToolCalls[0].Function.Name)
	assert.NotEqual(t, second.ID, r.ToolCalls[0].ID)

	// Turn 4: its result comes back, and the model has seen every result it asked for.
	r = chat.send(toolResult(t, r.ToolCalls[0].ID, map[string]any{"files": []any{"a.yaml", "b.yaml"}}))
	assert.Empty(t, r.ToolCalls)
	assert.Contains(t, r.Message, "a.yaml")
	assert.Contains(t, r.Message, "kyverno.io/v1")

	// Both repairs are logged, with counts and no prompt text.
	repaired := g.logs.FilterMessage("request repaired").AllUntimed()
	var synthesized, orphans int64
	for _, e := range repaired {
		synthesized += e.ContextMap()["synthesized_tool_results"].(int64)
		orphans += e.ContextMap()["orphan_tool_results"].(int64)
	}
	for _, e := range g.logs.AllUntimed() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		for _, secret := range []string{testKey, "Require pod labels", "kyverno.io/v1", "require-labels.yaml", "policy assistant"} {
			assert.NotContains(t, line, secret, "log line %q", line)
		}
	}
	// list_files stays unanswered in the history of both later requests; each repairs it,
	// and each turns parallel calls off.
	assert.EqualValues(t, 2, synthesized, "turn 3 left list_files unanswered")
	assert.Zero(t, orphans)
	assert.Len(t, g.logs.FilterMessage("request repaired").FilterField(zap.Bool("parallel_calls_disabled", true)).AllUntimed(), 2)
}

// The same conversation start with the wrapped tool form the newer gollm client sends.
func TestWrappedToolsAreAccepted(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.ModelAliases = map[string][]config.Target{"sonnet": {{ModelID: testModel}}}
	g := start(t, cfg)
	resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat?model=sonnet&provider=bedrock", "NIRMATA-API "+testKey, turn1)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var r chatResponse
	require.NoError(t, json.Unmarshal(body, &r))
	require.Len(t, r.ToolCalls, 1)
	assert.Equal(t, testModel, r.Metadata.Model, "the alias resolved to its model id")
}
