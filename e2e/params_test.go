package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// Request parameters that shape an answer, on every surface: the ones accepted without
// effect, parallel_tool_calls, max_tool_rounds.

// recordedGateway starts a gateway whose Bedrock is a recorded simulator with faults,
// each call tried once.
func recordedGateway(t *testing.T, faults ...string) (*recordedSim, started) {
	t.Helper()
	sim := recordSim(t, faults...)
	return sim, start(t, defaultConfig(t), sim.upstream())
}

// TestIgnoredParamsOnNirmataAndGRPC: the Nirmata surface reports what it accepted without
// effect in the same header and in the answer's metadata; gRPC in header metadata and the
// answer's metadata.
func TestIgnoredParamsOnNirmataAndGRPC(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	body := `{"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0","temperature":0.5,"top_p":0.9,"stop":["\n","END"],
		"messages":[{"role":"user","content":"hi"}]}`
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, "top_p,stop[0]", resp.Header.Get("X-Gateway-Ignored-Params"))
	var answer struct {
		Metadata struct {
			IgnoredParams []string `json:"ignored_params"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(b, &answer))
	assert.Equal(t, []string{"top_p", "stop[0]"}, answer.Metadata.IgnoredParams)
	sent := sim.converseRequests(t)[0]["inferenceConfig"]
	assert.Equal(t, map[string]any{"maxTokens": 4096.0, "temperature": 0.5, "stopSequences": []any{"END"}}, sent, "maxTokens: default_max_tokens")

	// gRPC: response header metadata, and the answer's metadata.
	var header metadata.MD
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	out, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, body), grpc.Header(&header))
	require.NoError(t, err)
	assert.Equal(t, []string{"top_p,stop[0]"}, header.Get("x-gateway-ignored-params"))
	assert.Equal(t, []string{"top_p", "stop[0]"}, out.GetMetadata().GetIgnoredParams())
}

// TestParallelToolCallsOff: parallel_tool_calls false reaches Claude as Anthropic's
// tool_choice; on other families the gateway keeps the first call itself, and counts the
// rest; streams never show them.
func TestParallelToolCallsOff(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	ask := func(model string) oaRequest {
		return oaRequest{Model: model, Tools: []oaTool{weatherTool("get_weather"), weatherTool("get_time")}, ParallelToolCalls: new(false),
			Messages: []oaMessage{oaUser("Call get_weather and get_time for Lima.")}}
	}
	_, resp := oaChat(t, g, testKey, ask(testModel))
	require.Len(t, resp.Choices[0].Message.ToolCalls, 1)
	assert.Equal(t, map[string]any{"tool_choice": map[string]any{"type": "auto", "disable_parallel_tool_use": true}},
		sim.converseRequests(t)[0]["additionalModelRequestFields"])

	const nova = "us.amazon.nova-pro-v1:0"
	_, resp = oaChat(t, g, testKey, ask(nova))
	require.Len(t, resp.Choices[0].Message.ToolCalls, 1)
	assert.Equal(t, "get_weather", resp.Choices[0].Message.ToolCalls[0].Function.Name)
	assert.Equal(t, "tool_calls", resp.Choices[0].FinishReason)
	assert.NotContains(t, sim.converseRequests(t)[1], "additionalModelRequestFields")

	_, st := oaStream(t, g, testKey, ask(nova))
	require.Nil(t, st.failure)
	require.Len(t, st.answer.ToolCalls, 1)
	assert.Equal(t, "get_weather", st.answer.ToolCalls[0].Function.Name)
	// A stream's call is recorded once its handler returns, which may be just after the
	// client read the last event.
	require.Eventually(t, func() bool {
		return metricValue(t, g, "gateway_tool_calls_dropped_total", map[string]string{"reason": "parallel", "model": nova}) == 2
	}, 5*time.Second, 10*time.Millisecond, "Nova's second call, unary and streamed")

	// gRPC takes the same field.
	in := grpcRequest(t, `{"model":"`+nova+`","messages":[{"role":"user","content":"Call get_weather and get_time for Lima."}],
		"tools":[{"type":"function","function":{"name":"get_weather"}},{"type":"function","function":{"name":"get_time"}}]}`)
	in.ParallelToolCalls = proto.Bool(false)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	out, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, in)
	require.NoError(t, err)
	require.Len(t, out.GetToolCalls(), 1)
}

// TestPartialResultsTurnParallelCallsOff: a client that answered only the first of two
// calls (the deployed gollm client) gets one call per turn from then on, without asking.
func TestPartialResultsTurnParallelCallsOff(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	body := `{"messages":[{"role":"user","content":"Call get_weather and get_time for Lima."},
		{"role":"assistant","content":"","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}},
			{"id":"c2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"}],
		"tools":[{"type":"function","function":{"name":"get_weather"}},{"type":"function","function":{"name":"get_time"}}]}`
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat?client_type=gollm", "Bearer "+testKey, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, map[string]any{"tool_choice": map[string]any{"type": "auto", "disable_parallel_tool_use": true}},
		sim.converseRequests(t)[0]["additionalModelRequestFields"])
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_parallel_calls_disabled_total", map[string]string{"client_type": "gollm"}))
	assert.Equal(t, 1, g.logs.FilterMessage("request repaired").FilterField(zap.Bool("parallel_calls_disabled", true)).Len())
}

// TestParallelToolCallsDefault: parallel_tool_calls false in the configuration is the
// default of requests that do not set it; a request that sets it wins.
func TestParallelToolCallsDefault(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.ParallelToolCalls = false
	g := start(t, cfg)
	req := oaRequest{Model: "us.amazon.nova-pro-v1:0",
		Tools:    []oaTool{weatherTool("get_weather"), weatherTool("get_time")},
		Messages: []oaMessage{oaUser("Call get_weather and get_time for Lima.")}}
	_, resp := oaChat(t, g, testKey, req)
	assert.Len(t, resp.Choices[0].Message.ToolCalls, 1)
	req.ParallelToolCalls = new(true)
	_, resp = oaChat(t, g, testKey, req)
	assert.Len(t, resp.Choices[0].Message.ToolCalls, 2)
}

// TestToolBudget: a request whose max_tool_rounds are spent offers the model no tools,
// drops a call made anyway, and says so on every surface.
func TestToolBudget(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	// One round done, then the user asks for another tool: tools stay in toolConfig for
	// the history, so the simulated model calls it anyway.
	body := `{"max_tool_rounds":0,"messages":[{"role":"user","content":"Call get_weather for Lima."},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"},
		{"role":"assistant","content":"It is sunny."},
		{"role":"user","content":"Now call get_time for Lima."}],
		"tools":[{"type":"function","function":{"name":"get_weather"}},{"type":"function","function":{"name":"get_time"}}]}`
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, "exhausted", resp.Header.Get("X-Gateway-Tool-Budget"))
	var answer struct {
		ToolCalls    []any  `json:"tool_calls"`
		FinishReason string `json:"finish_reason"`
		Metadata     struct {
			ToolBudget string `json:"tool_budget"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(b, &answer))
	assert.Empty(t, answer.ToolCalls)
	assert.Equal(t, "stop", answer.FinishReason)
	assert.Equal(t, "exhausted", answer.Metadata.ToolBudget)
	sent := sim.converseRequests(t)[0]
	assert.NotContains(t, sent["toolConfig"], "toolChoice")
	system := sent["system"].([]any)
	assert.Contains(t, system[len(system)-1].(map[string]any)["text"], "tool budget for this task is used up")
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_tool_calls_dropped_total", map[string]string{"reason": "budget"}))

	// OpenAI, streamed: no call in the stream, finish "stop", the header before the first byte.
	httpResp, st := oaStream(t, g, testKey, oaRequest{
		Model: testModel, Tools: []oaTool{weatherTool("get_weather"), weatherTool("get_time")},
		Messages: []oaMessage{oaUser("Call get_weather for Lima.")}, MaxToolRounds: new(0),
	})
	require.Nil(t, st.failure)
	assert.Empty(t, st.answer.ToolCalls)
	assert.Equal(t, "stop", st.finish)
	assert.Equal(t, "exhausted", httpResp.Header.Get("X-Gateway-Tool-Budget"))
	assert.NotContains(t, sim.converseRequests(t)[1], "toolConfig", "no history of tool use: no tools at all")

	// gRPC: header metadata and the answer's metadata.
	in := grpcRequest(t, body)
	in.MaxToolRounds = proto.Int32(0)
	var header metadata.MD
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	out, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, in, grpc.Header(&header))
	require.NoError(t, err)
	assert.Empty(t, out.GetToolCalls())
	assert.Equal(t, "exhausted", out.GetMetadata().GetToolBudget())
	assert.Equal(t, []string{"exhausted"}, header.Get("x-gateway-tool-budget"))
}
