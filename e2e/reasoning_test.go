package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// Extended thinking end to end (docs/PROTOCOL.md 11) against the simulator, which signs its
// reasoning blocks and refuses, with Bedrock's texts, a tool turn whose blocks are missing
// or altered (docs/BEDROCK.md G7, G8): every request below that Bedrock would refuse fails.

// thinkingTask names two tools, so the simulator's model calls them one per turn when
// parallel calls are off.
const thinkingTask = "Check the weather: call get_weather and then get_forecast."

// agentTurns runs the loop of an OpenAI client the way agents write it: each answer goes
// back as the official clients resend it (oaAnswer.param, which drops thinking_blocks),
// with a result per call; it returns the x-gateway-thinking header of every turn.
func agentTurns(t *testing.T, g started, req oaRequest) []string {
	t.Helper()
	var outcomes []string
	for turn := 0; turn < 5; turn++ {
		httpResp, resp := oaChat(t, g, testKey, req)
		outcomes = append(outcomes, httpResp.Header.Get("X-Gateway-Thinking"))
		msg := resp.Choices[0].Message
		requireThinkingBlock(t, msg, "thinking", "turn %d carries its blocks", turn)
		require.NotNil(t, msg.ReasoningContent, "turn %d", turn)
		assert.NotEmpty(t, *msg.ReasoningContent, "turn %d", turn)
		if len(msg.ToolCalls) == 0 {
			return outcomes
		}
		require.Len(t, msg.ToolCalls, 1, "parallel calls are off")
		req.Messages = append(req.Messages, msg.param(), oaToolResult(`{"temp_c":21}`, msg.ToolCalls[0].ID))
	}
	t.Fatal("the loop did not end")
	return nil
}

// requireThinkingBlock requires an answer's first thinking block to be of typ and to carry
// its text (a thinking block) or its data (a redacted one).
func requireThinkingBlock(t testing.TB, msg oaAnswer, typ string, msgAndArgs ...any) {
	t.Helper()
	require.NotEmpty(t, msg.ThinkingBlocks, msgAndArgs...)
	b := msg.ThinkingBlocks[0]
	require.Equal(t, typ, b.Type, msgAndArgs...)
	if typ == "thinking" {
		require.NotEmpty(t, b.Thinking, msgAndArgs...)
	} else {
		require.NotEmpty(t, b.Data, msgAndArgs...)
	}
}

func thinkingParams() oaRequest {
	return oaRequest{
		Model:             testModel,
		Messages:          []oaMessage{oaUser(thinkingTask)},
		Tools:             []oaTool{weatherTool("get_weather"), weatherTool("get_forecast")},
		ParallelToolCalls: new(false),
		ReasoningEffort:   "low",
	}
}

// TestReasoningRestoredForOpenAIClients: OpenAI clients drop the blocks, the gateway puts
// them back from its reasoning cache, and thinking stays on through the whole tool loop.
func TestReasoningRestoredForOpenAIClients(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	outcomes := agentTurns(t, g, thinkingParams())
	assert.Equal(t, []string{"", "restored", "restored"}, outcomes)

	// Bedrock got the thinking switch every turn, and each tool turn's blocks first.
	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 3)
	for i, r := range reqs {
		assert.Equal(t, map[string]any{"type": "enabled", "budget_tokens": 1024.0}, r["additionalModelRequestFields"].(map[string]any)["thinking"], "request %d", i)
		if i > 0 {
			msgs := r["messages"].([]any)
			assistant := msgs[len(msgs)-2].(map[string]any)["content"].([]any)
			assert.Contains(t, assistant[0], "reasoningContent", "request %d", i)
		}
	}
	assert.InDelta(t, 2, metricValue(t, g, "gateway_reasoning_restored_total", map[string]string{"model": testModel}), 0)
}

// TestReasoningMissingBlocks: a tool turn whose blocks neither the client nor the cache has
// (the cache is per key and per answer: here the call id is one the gateway never gave)
// goes without thinking instead of being refused, and says so.
func TestReasoningMissingBlocks(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	params := thinkingParams()
	assistant := oaMessage{Role: "assistant", ToolCalls: []oaToolCall{{ID: "call_from_elsewhere", Type: "function",
		Function: oaFunction{Name: "get_weather", Arguments: "{}"}}}}
	params.Messages = append(params.Messages, assistant, oaToolResult("21", "call_from_elsewhere"))
	httpResp, resp := oaChat(t, g, testKey, params)
	assert.Equal(t, "disabled-missing-signature", httpResp.Header.Get("X-Gateway-Thinking"))
	assert.Nil(t, resp.Choices[0].Message.ThinkingBlocks)
	assert.NotContains(t, sim.converseRequests(t)[0]["additionalModelRequestFields"], "thinking", "no thinking sent")
	assert.InDelta(t, 1, metricValue(t, g, "gateway_thinking_disabled_total", map[string]string{"model": testModel, "reason": "missing-signature"}), 0)
}

// TestReasoningStreamedForOpenAIClients: the SSE stream carries reasoning_content deltas and
// the whole block; the gateway keeps a streamed answer's blocks too.
func TestReasoningStreamedForOpenAIClients(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	params := thinkingParams()
	for turn := 0; turn < 3; turn++ {
		httpResp, st := oaStream(t, g, testKey, params)
		require.Nil(t, st.failure, "turn %d", turn)
		assert.NotEmpty(t, st.reasoning, "turn %d", turn)
		assert.Len(t, st.blocks, 1, "turn %d", turn)
		if turn > 0 {
			assert.Equal(t, "restored", httpResp.Header.Get("X-Gateway-Thinking"))
		}
		msg := st.answer
		if len(msg.ToolCalls) == 0 {
			assert.Equal(t, 2, turn)
			return
		}
		params.Messages = append(params.Messages, msg.param(), oaToolResult("21", msg.ToolCalls[0].ID))
	}
	t.Fatal("the loop did not end")
}

// TestReasoningOnNirmata: a client that sends reasoning_blocks back byte for byte needs no
// cache; the unary answer carries reasoning and reasoning_blocks, JSONL only on opt-in,
// chunked always.
func TestReasoningOnNirmata(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	url := "http://" + g.HTTP + "/llm-apps/chat"
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	first := `{"model":"` + testModel + `","reasoning_effort":"medium",` + tools + `,"messages":[{"role":"user","content":"call get_weather"}]}`
	resp, body := post(t, url, "Bearer "+testKey, first)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var answer struct {
		Message         string
		Reasoning       string
		ReasoningBlocks []json.RawMessage `json:"reasoning_blocks"`
		ToolCalls       []json.RawMessage `json:"tool_calls"`
	}
	require.NoError(t, json.Unmarshal(body, &answer))
	require.NotEmpty(t, answer.Reasoning)
	require.Len(t, answer.ReasoningBlocks, 1)
	require.Len(t, answer.ToolCalls, 1)
	var call struct{ ID string }
	require.NoError(t, json.Unmarshal(answer.ToolCalls[0], &call))

	// The next turn with the blocks as received: thinking stays on with nothing to say.
	second := `{"model":"` + testModel + `","reasoning_effort":"medium",` + tools + `,"messages":[{"role":"user","content":"call get_weather"},` +
		`{"role":"assistant","content":"","reasoning_blocks":[` + string(answer.ReasoningBlocks[0]) + `],"tool_calls":[` + string(answer.ToolCalls[0]) + `]},` +
		`{"role":"tool","tool_call_id":"` + call.ID + `","content":"21"}]}`
	resp, body = post(t, url, "Bearer "+testKey, second)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"))
	assert.Contains(t, string(body), `"reasoning_blocks":[{"type":"thinking"`)

	// An altered block is Bedrock's 400, passed on: the gateway never hides it.
	tampered := strings.Replace(second, `"thinking":"`, `"thinking":"X`, 1)
	resp, body = post(t, url, "Bearer "+testKey, tampered)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
	assert.Contains(t, string(body), "Invalid `signature` in `thinking` block")

	// JSONL: reasoning lines only with ?reasoning=true.
	for _, q := range []string{"?stream=true", "?stream=true&reasoning=true"} {
		resp, body = post(t, url+q, "Bearer "+testKey, first)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		types := lineTypes(t, body)
		if strings.Contains(q, "reasoning") {
			assert.Equal(t, []string{"reasoning", "reasoning_block", "content", "tool_call", "tool_call", "done"}, types)
		} else {
			assert.Equal(t, []string{"content", "tool_call", "tool_call", "done"}, types)
		}
	}
	resp, body = post(t, url+"?chunked=true", "Bearer "+testKey, first)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{"Reasoning", "ReasoningBlock", "Text", "ToolStart", "Done"}, lineTypes(t, body))
}

// lineTypes is the "type" of every line of a JSONL body, consecutive reasoning and
// content deltas counted once.
func lineTypes(t *testing.T, body []byte) []string {
	t.Helper()
	var types []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var l struct{ Type string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		if n := len(types); n > 0 && types[n-1] == l.Type && (l.Type == "reasoning" || l.Type == "content" || l.Type == "Reasoning" || l.Type == "Text") {
			continue
		}
		types = append(types, l.Type)
	}
	return types
}

// TestReasoningOverGRPCStream: stream_reasoning sends reasoning and reasoning_block events;
// the unary answer has the blocks and the thinking metadata.
func TestReasoningOverGRPCStream(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	c := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC))
	req := &llmgatewayv1.ChatRequest{Model: testModel, ReasoningEffort: "low", StreamReasoning: true,
		Messages: []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_USER, Content: "hello"}}}
	st, err := c.ChatStream(ctx, req)
	require.NoError(t, err)
	var kinds []string
	for {
		ev, err := st.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		var k string
		switch {
		case ev.GetReasoning() != nil:
			k = "reasoning"
		case ev.GetReasoningBlock() != nil:
			k = "reasoning_block"
			assert.NotEmpty(t, ev.GetReasoningBlock().GetSignature())
		case ev.GetContent() != nil:
			k = "content"
		case ev.GetDone() != nil:
			k = "done"
		}
		if n := len(kinds); n == 0 || kinds[n-1] != k {
			kinds = append(kinds, k)
		}
	}
	assert.Equal(t, []string{"reasoning", "reasoning_block", "content", "done"}, kinds)

	var hdr metadata.MD
	resp, err := c.Chat(ctx, &llmgatewayv1.ChatRequest{Model: testModel, ReasoningEffort: "low", Temperature: ptr(0.3),
		Messages: []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_USER, Content: "hello"}}}, grpc.Header(&hdr))
	require.NoError(t, err)
	assert.NotEmpty(t, resp.GetReasoning())
	require.Len(t, resp.GetReasoningBlocks(), 1)
	assert.Equal(t, []string{"temperature"}, resp.GetMetadata().GetIgnoredParams(), "not sent with thinking on")
}

// TestThinkingAboveConverseLimit: a unary request whose thinking budget takes maxTokens
// above 21,333 is served through ConverseStream, which the simulator, like Bedrock,
// requires.
func TestThinkingAboveConverseLimit(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	_, resp := oaChat(t, g, testKey, oaRequest{Model: testModel, ReasoningEffort: "xhigh", Messages: []oaMessage{oaUser("hello")}})
	assert.NotEmpty(t, resp.Choices[0].Message.Content)
	assert.NotEmpty(t, resp.Choices[0].Message.ThinkingBlocks)
	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 1)
	assert.EqualValues(t, 32000+4096, reqs[0]["inferenceConfig"].(map[string]any)["maxTokens"])
}
func ptr[T any](v T) *T { return &v }

// TestRedactedReasoning: a redacted block reaches the client as its base64 data, is kept by
// the gateway like any block, and goes back to Bedrock byte for byte, which checks it.
func TestRedactedReasoning(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t, "redacted_thinking")
	params := thinkingParams()
	_, resp := oaChat(t, g, testKey, params)
	msg := resp.Choices[0].Message
	requireThinkingBlock(t, msg, "redacted_thinking")
	assert.Nil(t, msg.ReasoningContent, "a redacted block has no text to show")
	require.Len(t, msg.ToolCalls, 1)
	params.Messages = append(params.Messages, msg.param(), oaToolResult("21", msg.ToolCalls[0].ID))
	httpResp, _ := oaChat(t, g, testKey, params)
	assert.Equal(t, "restored", httpResp.Header.Get("X-Gateway-Thinking"))
	reqs := sim.converseRequests(t)
	msgs := reqs[1]["messages"].([]any)
	first := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	assert.Contains(t, first["reasoningContent"], "redactedContent")
}
