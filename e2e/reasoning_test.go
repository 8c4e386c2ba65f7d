package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
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

// agentTurns runs openai-go's loop the way agents write it: each answer goes back through
// message.ToParam(), which drops thinking_blocks, with a result per call; it returns the
// x-gateway-thinking header of every turn.
func agentTurns(t *testing.T, client openai.Client, params openai.ChatCompletionNewParams, opts ...option.RequestOption) []string {
	t.Helper()
	var outcomes []string
	for turn := 0; turn < 5; turn++ {
		var httpResp *http.Response
		resp, err := client.Chat.Completions.New(t.Context(), params, append(opts, option.WithResponseInto(&httpResp))...)
		require.NoError(t, err, "turn %d", turn)
		outcomes = append(outcomes, httpResp.Header.Get("X-Gateway-Thinking"))
		msg := resp.Choices[0].Message
		raw := msg.RawJSON()
		assert.Contains(t, raw, `"thinking_blocks":[{"type":"thinking","thinking":"`, "turn %d carries its blocks", turn)
		assert.NotEmpty(t, msg.JSON.ExtraFields["reasoning_content"].Raw(), "turn %d", turn)
		if len(msg.ToolCalls) == 0 {
			return outcomes
		}
		require.Len(t, msg.ToolCalls, 1, "parallel calls are off")
		params.Messages = append(params.Messages, msg.ToParam())
		params.Messages = append(params.Messages, openai.ToolMessage(`{"temp_c":21}`, msg.ToolCalls[0].ID))
	}
	t.Fatal("the loop did not end")
	return nil
}

func thinkingParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:             testModel,
		Messages:          []openai.ChatCompletionMessageParamUnion{openai.UserMessage(thinkingTask)},
		Tools:             []openai.ChatCompletionToolUnionParam{weatherTool("get_weather"), weatherTool("get_forecast")},
		ParallelToolCalls: openai.Bool(false),
		ReasoningEffort:   shared.ReasoningEffortLow,
	}
}

// TestReasoningRestoredForOpenAIClients: openai-go drops the blocks, the gateway puts them
// back from its reasoning cache, and thinking stays on through the whole tool loop.
func TestReasoningRestoredForOpenAIClients(t *testing.T) {
	client, sim, g := openAIGateway(t)
	outcomes := agentTurns(t, client, thinkingParams())
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
	client, sim, g := openAIGateway(t)
	params := thinkingParams()
	assistant := openai.AssistantMessage("")
	assistant.OfAssistant.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: "call_from_elsewhere", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: "{}"}}}}
	params.Messages = append(params.Messages, assistant, openai.ToolMessage("21", "call_from_elsewhere"))
	var httpResp *http.Response
	resp, err := client.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&httpResp))
	require.NoError(t, err)
	assert.Equal(t, "disabled-missing-signature", httpResp.Header.Get("X-Gateway-Thinking"))
	assert.NotContains(t, resp.Choices[0].Message.RawJSON(), "thinking_blocks")
	assert.NotContains(t, sim.converseRequests(t)[0]["additionalModelRequestFields"], "thinking", "no thinking sent")
	assert.InDelta(t, 1, metricValue(t, g, "gateway_thinking_disabled_total", map[string]string{"model": testModel, "reason": "missing-signature"}), 0)
}

// TestReasoningStreamedForOpenAIClients: the SSE stream carries reasoning_content deltas and
// the whole block; the gateway keeps a streamed answer's blocks too.
func TestReasoningStreamedForOpenAIClients(t *testing.T) {
	client, _, _ := openAIGateway(t)
	params := thinkingParams()
	for turn := 0; turn < 3; turn++ {
		var httpResp *http.Response
		stream := client.Chat.Completions.NewStreaming(t.Context(), params, option.WithResponseInto(&httpResp))
		var acc openai.ChatCompletionAccumulator
		var reasoning strings.Builder
		blocks := 0
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) == 0 {
				continue
			}
			var d struct {
				ReasoningContent string            `json:"reasoning_content"`
				ThinkingBlocks   []json.RawMessage `json:"thinking_blocks"`
			}
			require.NoError(t, json.Unmarshal([]byte(chunk.Choices[0].Delta.RawJSON()), &d))
			reasoning.WriteString(d.ReasoningContent)
			blocks += len(d.ThinkingBlocks)
		}
		require.NoError(t, stream.Err(), "turn %d", turn)
		assert.NotEmpty(t, reasoning.String(), "turn %d", turn)
		assert.Equal(t, 1, blocks, "turn %d", turn)
		if turn > 0 {
			assert.Equal(t, "restored", httpResp.Header.Get("X-Gateway-Thinking"))
		}
		msg := acc.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			assert.Equal(t, 2, turn)
			return
		}
		params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("21", msg.ToolCalls[0].ID))
	}
	t.Fatal("the loop did not end")
}

// TestReasoningOnNirmata: a client that sends reasoning_blocks back byte for byte needs no
// cache; the unary answer carries reasoning and reasoning_blocks, JSONL only on opt-in,
// chunked always.
func TestReasoningOnNirmata(t *testing.T) {
	_, _, g := openAIGateway(t)
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
	_, _, g := openAIGateway(t)
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
	client, sim, _ := openAIGateway(t)
	resp, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: testModel, ReasoningEffort: shared.ReasoningEffortXhigh,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Choices[0].Message.Content)
	assert.Contains(t, resp.Choices[0].Message.RawJSON(), `"thinking_blocks"`)
	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 1)
	assert.EqualValues(t, 32000+4096, reqs[0]["inferenceConfig"].(map[string]any)["maxTokens"])
}
func ptr[T any](v T) *T { return &v }

// TestRedactedReasoning: a redacted block reaches the client as its base64 data, is kept by
// the gateway like any block, and goes back to Bedrock byte for byte, which checks it.
func TestRedactedReasoning(t *testing.T) {
	client, sim, _ := openAIGateway(t, "redacted_thinking")
	params := thinkingParams()
	resp, err := client.Chat.Completions.New(t.Context(), params)
	require.NoError(t, err)
	msg := resp.Choices[0].Message
	assert.Contains(t, msg.RawJSON(), `"thinking_blocks":[{"type":"redacted_thinking","data":"`)
	assert.NotContains(t, msg.RawJSON(), "reasoning_content", "a redacted block has no text to show")
	require.Len(t, msg.ToolCalls, 1)
	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("21", msg.ToolCalls[0].ID))
	var httpResp *http.Response
	_, err = client.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&httpResp))
	require.NoError(t, err)
	assert.Equal(t, "restored", httpResp.Header.Get("X-Gateway-Thinking"))
	reqs := sim.converseRequests(t)
	msgs := reqs[1]["messages"].([]any)
	first := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	assert.Contains(t, first["reasoningContent"], "redactedContent")
}
