package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/config"
)

// Failover between an alias's targets (docs/PROTOCOL.md 14.4), end to end: the gateway over
// HTTP and gRPC, the simulator behind it over HTTP, faults scoped to one model or one
// region, and what the simulator received read back.

// failoverGateway starts a gateway whose alias "agent" has targets, on a recorded
// simulator with faults and without SDK retries.
func failoverGateway(t *testing.T, targets []config.Target, faults ...string) (started, *recordedSim) {
	t.Helper()
	sim := recordSim(t, faults...)
	cfg := defaultConfig(t)
	cfg.ModelAliases = map[string][]config.Target{"agent": targets}
	return start(t, cfg, sim.upstream()), sim
}

// agentBody is a Nirmata request to the alias with a system prompt, a tool and user text.
func agentBody(user, extra string) string {
	return `{"model": "agent", "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": ` +
		quote(user) + `}], "tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]` + extra + `}`
}

func models(calls []simCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Model
	}
	return out
}

// TestFailoverUnary: a throttled first target is failed over to the second on every
// surface, before anything reached the client: the answer names the model that answered
// (the OpenAI answer keeps the name the client sent), the simulator saw both attempts, and
// the metric and a log line without prompt text say so.
func TestFailoverUnary(t *testing.T) {
	t.Parallel()
	g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: novaPro}}, "throttle,model="+testModel)

	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentBody("Nirmata asks about Oslo.", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var r chatResponse
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, novaPro, r.Metadata.Model)
	assert.Contains(t, *r.Message, "Nirmata asks about Oslo.")

	_, completion := oaChat(t, g, testKey, oaRequest{Model: "agent", Messages: []oaMessage{oaUser("OpenAI asks about Lima.")}})
	assert.Equal(t, "agent", completion.Model, "OpenAI's model is the name the client sent")
	assert.Contains(t, completion.Choices[0].Message.Content, "OpenAI asks about Lima.")

	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	out, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, agentBody("gRPC asks about Pune.", "")))
	require.NoError(t, err)
	assert.Equal(t, novaPro, out.GetMetadata().GetModel())

	assert.Equal(t, []string{testModel, novaPro, testModel, novaPro, testModel, novaPro}, models(sim.received()),
		"each request tried the first target, then the second")
	assert.InDelta(t, 3, metricValue(t, g, "gateway_failovers_total", map[string]string{"alias": "agent", "reason": "ThrottlingException"}), 0)
	assert.InDelta(t, 3, metricValue(t, g, "gateway_upstream_errors_total", map[string]string{"model": testModel, "error_code": "ThrottlingException"}), 0)
	assert.InDelta(t, 3, metricValue(t, g, "gateway_requests_total", map[string]string{"model": novaPro, "code": "ok"}), 0)

	lines := g.logs.FilterMessage("failing over").All()
	require.Len(t, lines, 3)
	for _, l := range lines {
		f := l.ContextMap()
		assert.Equal(t, "agent", f["alias"])
		assert.Equal(t, testModel, f["from"])
		assert.Equal(t, novaPro, f["to"])
		assert.Equal(t, "ThrottlingException", f["error_code"])
	}
	for _, l := range g.logs.All() {
		line := l.Message + " " + mustJSON(t, l.ContextMap())
		for _, text := range []string{"Oslo", "Lima", "Pune", "terse"} {
			assert.NotContains(t, line, text, "no prompt text in the log")
		}
	}
}

// TestFailoverStreams: a stream fails over when the first target fails before its first
// content: refused before its body (throttle), or with an exception right after
// messageStart (stream_exception, after=1), on Nirmata's JSONL stream and OpenAI's SSE.
func TestFailoverStreams(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"throttle", "stream_exception,after=1"} {
		t.Run(fault, func(t *testing.T) {
			g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: novaPro}}, fault+",model="+testModel)

			resp := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", agentBody("Stream about Oslo.", ""))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			res := readJSONL(t, resp.Body)
			assert.Equal(t, "done", res.last.Type)
			assert.Contains(t, res.text, "Stream about Oslo.")

			_, st := oaStream(t, g, testKey, oaRequest{Model: "agent", Messages: []oaMessage{oaUser("Stream about Lima.")}})
			require.Nil(t, st.failure)
			assert.Contains(t, st.answer.Content, "Stream about Lima.")

			calls := sim.received()
			assert.Equal(t, []string{testModel, novaPro, testModel, novaPro}, models(calls))
			for _, c := range calls {
				assert.True(t, c.Stream)
			}
			assert.InDelta(t, 2, metricValue(t, g, "gateway_failovers_total", map[string]string{"alias": "agent", "reason": "ThrottlingException"}), 0)
			assert.InDelta(t, 2, metricValue(t, g, "gateway_requests_total", map[string]string{"route": "chat_stream", "model": novaPro, "code": "ok"}), 0)
			// The failed attempts' upstream streams are closed: goleak (TestMain) finds a
			// connection reader left behind.
		})
	}
}

// TestNoFailoverAfterTheFirstByte: an exception after the stream's first content is the
// client's error, as without targets; the second target is never asked.
func TestNoFailoverAfterTheFirstByte(t *testing.T) {
	t.Parallel()
	g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: novaPro}}, "stream_exception,model="+testModel)

	resp := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", agentBody("Tell me about Oslo in many words.", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	res := readJSONL(t, resp.Body)
	assert.NotEmpty(t, res.text, "content reached the client first")
	assert.Equal(t, "error", res.last.Type)
	assert.Equal(t, "resource_exhausted", res.last.Error.Code)

	_, st := oaStream(t, g, testKey, oaRequest{Model: "agent", Messages: []oaMessage{oaUser("Tell me about Lima in many words.")}})
	require.NotNil(t, st.failure, "the error event ends the stream")
	assert.Positive(t, st.chunks)

	assert.Equal(t, []string{testModel, testModel}, models(sim.received()), "one attempt each")
	assert.Zero(t, metricValue(t, g, "gateway_failovers_total", nil))
}

// TestNoFailoverOnValidation: a ValidationException is the request's fault, not the
// target's: answered at once, the second target never asked. The history carries a
// reasoning block with a forged signature, which the simulator refuses as Bedrock does;
// both targets are the same foundation model, so both would get the block.
func TestNoFailoverOnValidation(t *testing.T) {
	t.Parallel()
	g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: testModel, Region: "us-west-2"}})
	body := `{"model": "agent", "reasoning_effort": "low", "messages": [
		{"role": "user", "content": "Weather in Oslo? Use get_weather."},
		{"role": "assistant", "content": "", "reasoning_blocks": [{"type": "thinking", "thinking": "I will call it.", "signature": "Zm9yZ2Vk"}],
		 "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "content": "21"}],
		"tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}]}`
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	assert.Contains(t, string(b), "signature")
	assert.Len(t, sim.received(), 1)
	assert.Zero(t, metricValue(t, g, "gateway_failovers_total", nil))
}

// TestFailoverAcrossRegions: targets of one model in two regions; the simulator throttles
// what is signed for the first region, and sees the second attempt signed for the second.
func TestFailoverAcrossRegions(t *testing.T) {
	t.Parallel()
	g, sim := failoverGateway(t, []config.Target{{ModelID: testModel, Region: "us-east-1"}, {ModelID: testModel, Region: "us-west-2"}},
		"throttle,region=us-east-1")
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentBody("Regions.", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var r chatResponse
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, testModel, r.Metadata.Model)
	assert.Equal(t, []simCall{{Model: testModel, Region: "us-east-1"}, {Model: testModel, Region: "us-west-2"}}, sim.received())
	assert.InDelta(t, 1, metricValue(t, g, "gateway_failovers_total", map[string]string{"alias": "agent"}), 0)

	// A model the client names directly goes to the gateway's own region (AWS_REGION).
	resp, b = post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, `{"model": "`+testModel+`", "messages": [{"role": "user", "content": "hi"}]}`)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(b))
	assert.Equal(t, "us-east-1", sim.received()[2].Region)
}

// TestSimFailsOverAcrossRegions: under --sim every region's client reaches the one
// simulator, each signing for its own region, which a region-scoped fault tells apart.
func TestSimFailsOverAcrossRegions(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig(t)
	cfg.Sim.Enabled = true
	cfg.Sim.Faults = []string{"throttle,region=us-east-1"}
	cfg.ModelAliases = map[string][]config.Target{"agent": {{ModelID: testModel}, {ModelID: testModel, Region: "eu-west-1"}}}
	g := start(t, cfg)
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, agentBody("Sim regions.", ""))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.InDelta(t, 1, metricValue(t, g, "gateway_failovers_total", map[string]string{"alias": "agent", "reason": "ThrottlingException"}), 0)
	regions := map[string]bool{}
	for _, l := range g.logs.FilterMessage("bedrock upstream").All() {
		regions[l.ContextMap()["region"].(string)] = true
	}
	assert.Equal(t, map[string]bool{"us-east-1": true, "eu-west-1": true}, regions, "one client per region, built at startup")
}

// TestFailoverAffinity: a conversation that failed over stays on the target that answered
// it: its next turn goes there first, while another conversation starts at the first
// target again. prompt_cache_key, when sent, names the conversation whatever its messages.
func TestFailoverAffinity(t *testing.T) {
	t.Parallel()
	t.Run("by its messages", func(t *testing.T) {
		g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: novaPro}}, "throttle,times=1,model="+testModel)
		url := "http://" + g.HTTP + "/llm-apps/chat"
		resp, b := post(t, url, "Bearer "+testKey, agentBody("Weather in Oslo? Use get_weather.", ""))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		var r chatResponse
		require.NoError(t, json.Unmarshal(b, &r))
		require.Len(t, r.ToolCalls, 1)

		// Turn 2: the same system prompt, tools and first user message, and more history.
		next := strings.Replace(agentBody("Weather in Oslo? Use get_weather.", ""), `}], "tools"`,
			`}, {"role": "assistant", "content": "", "tool_calls": [{"id": "`+r.ToolCalls[0].ID+`", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
			{"role": "tool", "tool_call_id": "`+r.ToolCalls[0].ID+`", "content": "21"}], "tools"`, 1)
		resp, b = post(t, url, "Bearer "+testKey, next)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		require.NoError(t, json.Unmarshal(b, &r))
		assert.Equal(t, novaPro, r.Metadata.Model)

		// Another conversation: the first target, which answers now.
		resp, b = post(t, url, "Bearer "+testKey, agentBody("Weather in Lima?", ""))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		require.NoError(t, json.Unmarshal(b, &r))
		assert.Equal(t, testModel, r.Metadata.Model)

		assert.Equal(t, []string{testModel, novaPro, novaPro, testModel}, models(sim.received()))
		assert.InDelta(t, 1, metricValue(t, g, "gateway_failovers_total", nil), 0)
	})
	t.Run("by prompt_cache_key", func(t *testing.T) {
		g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: novaPro}}, "throttle,times=1,model="+testModel)
		ask := func(user, key string) string {
			oaChat(t, g, testKey, oaRequest{Model: "agent", Messages: []oaMessage{oaUser(user)}, PromptCacheKey: key})
			calls := sim.received()
			return calls[len(calls)-1].Model
		}
		assert.Equal(t, novaPro, ask("First question.", "conv-7"))
		assert.Equal(t, novaPro, ask("Another first question.", "conv-7"), "the key names the conversation")
		assert.Equal(t, testModel, ask("First question.", ""), "without the key, another conversation")
		assert.Equal(t, testModel, ask("First question.", "conv-8"))
		assert.Len(t, sim.received(), 5)
	})
}

// TestFailoverDisablesThinking: a conversation whose reasoning Claude Sonnet 4 wrote fails
// over to Sonnet 4.5, another foundation model: the blocks are left out and thinking is off
// for that call, and the answer says so. The simulator refuses another model's blocks with
// thinking on (docs/BEDROCK.md G9), so the call would fail otherwise.
func TestFailoverDisablesThinking(t *testing.T) {
	t.Parallel()
	// The fault names the profile id; turn 1 goes to the foundation model itself, which it
	// leaves alone, and which signs for the same foundation model.
	g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: sonnet45}}, "throttle,model="+testModel)
	url := "http://" + g.HTTP + "/llm-apps/chat"
	const direct = "anthropic.claude-sonnet-4-20250514-v1:0"
	turn1 := `{"model": "` + direct + `", "reasoning_effort": "low", "messages": [{"role": "user", "content": "Weather in Oslo? Use get_weather."}],
		"tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}]}`
	resp, b := post(t, url, "Bearer "+testKey, turn1)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var r1 struct {
		ReasoningBlocks []json.RawMessage `json:"reasoning_blocks"`
		ToolCalls       []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	require.NoError(t, json.Unmarshal(b, &r1))
	require.NotEmpty(t, r1.ReasoningBlocks)
	require.Len(t, r1.ToolCalls, 1)

	blocks, err := json.Marshal(r1.ReasoningBlocks)
	require.NoError(t, err)
	id := r1.ToolCalls[0].ID
	turn2 := `{"model": "agent", "reasoning_effort": "low", "messages": [
		{"role": "user", "content": "Weather in Oslo? Use get_weather."},
		{"role": "assistant", "content": "", "reasoning_blocks": ` + string(blocks) + `,
		 "tool_calls": [{"id": "` + id + `", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
		{"role": "tool", "tool_call_id": "` + id + `", "content": "21"}],
		"tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}]}`
	resp, b = post(t, url, "Bearer "+testKey, turn2)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, "disabled-failover", resp.Header.Get("X-Gateway-Thinking"))
	var r2 struct {
		Metadata struct {
			Model    string `json:"model"`
			Thinking string `json:"thinking"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(b, &r2))
	assert.Equal(t, sonnet45, r2.Metadata.Model)
	assert.Equal(t, "disabled-failover", r2.Metadata.Thinking)

	assert.Equal(t, []string{direct, testModel, sonnet45}, models(sim.received()))
	reqs := sim.converseRequests(t)
	assert.Contains(t, reqs[1]["additionalModelRequestFields"], "thinking", "the first target, the same model, gets thinking and the blocks")
	assert.Contains(t, mustJSON(t, reqs[1]["messages"]), "reasoningContent")
	assert.NotContains(t, reqs[2], "additionalModelRequestFields", "no thinking for another foundation model")
	assert.NotContains(t, mustJSON(t, reqs[2]["messages"]), "reasoningContent", "nor its blocks")
	assert.InDelta(t, 1, metricValue(t, g, "gateway_thinking_disabled_total", map[string]string{"model": sonnet45, "reason": "failover"}), 0)
}

// maxTokensSent is the maxTokens of the simulator's i-th request; 0 when none was sent.
func maxTokensSent(t *testing.T, sim *recordedSim, i int) float64 {
	t.Helper()
	reqs := sim.converseRequests(t)
	require.Greater(t, len(reqs), i)
	c, ok := reqs[i]["inferenceConfig"].(map[string]any)
	if !ok {
		return 0
	}
	n, _ := c["maxTokens"].(float64)
	return n
}

// TestDefaultMaxTokens: a request without max_tokens is sent default_max_tokens on every
// surface (docs/PROTOCOL.md 14.5), capped at the model's known maximum output; the
// request's own wins, under the same cap; 0 sends none, except beside a thinking budget.
func TestDefaultMaxTokens(t *testing.T) {
	t.Parallel()
	const llama = "meta.llama3-1-70b-instruct-v1:0"
	hi := func(model, extra string) string {
		return `{"model": "` + model + `", "messages": [{"role": "user", "content": "hi"}]` + extra + `}`
	}
	t.Run("default", func(t *testing.T) {
		sim := recordSim(t)
		g := start(t, defaultConfig(t), sim.upstream())
		url := "http://" + g.HTTP + "/llm-apps/chat"
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
		grpcClient := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC))
		steps := []struct {
			name string
			send func() error
			want float64
		}{
			{"Nirmata", func() error { postOK(t, url, hi(testModel, "")); return nil }, 4096},
			{"Nirmata stream", func() error {
				resp := streamPost(t, url+"?stream=true", hi(testModel, ""))
				assert.Equal(t, "done", readJSONL(t, resp.Body).last.Type)
				return nil
			}, 4096},
			{"Nirmata max_tokens", func() error { postOK(t, url, hi(testModel, `, "max_tokens": 300`)); return nil }, 300},
			{"OpenAI", func() error {
				oaChat(t, g, testKey, oaRequest{Model: testModel, Messages: []oaMessage{oaUser("hi")}})
				return nil
			}, 4096},
			{"OpenAI max_completion_tokens", func() error {
				oaChat(t, g, testKey, oaRequest{Model: testModel, MaxCompletionTokens: 200, Messages: []oaMessage{oaUser("hi")}})
				return nil
			}, 200},
			{"gRPC", func() error { _, err := grpcClient.Chat(ctx, grpcRequest(t, hi(testModel, ""))); return err }, 4096},
			{"capped at Llama 3's maximum", func() error { postOK(t, url, hi(llama, "")); return nil }, 2048},
			{"the request's own is capped too", func() error { postOK(t, url, hi(llama, `, "max_tokens": 3000`)); return nil }, 2048},
			{"the thinking budget on top", func() error { postOK(t, url, hi(testModel, `, "reasoning_effort": "low"`)); return nil }, 1024 + 4096},
		}
		for i, s := range steps {
			require.NoError(t, s.send(), s.name)
			assert.InDelta(t, s.want, maxTokensSent(t, sim, i), 0, s.name)
		}
	})
	t.Run("0 sends none", func(t *testing.T) {
		sim := recordSim(t)
		cfg := defaultConfig(t)
		cfg.DefaultMaxTokens = 0
		g := start(t, cfg, sim.upstream())
		url := "http://" + g.HTTP + "/llm-apps/chat"
		postOK(t, url, hi(testModel, ""))
		assert.NotContains(t, sim.converseRequests(t)[0], "inferenceConfig")
		postOK(t, url, hi(testModel, `, "reasoning_effort": "low"`))
		assert.InDelta(t, 1024+4096, maxTokensSent(t, sim, 1), 0, "4096 stands in beside a budget")
	})
}

// postOK posts a Nirmata request and fails the test unless it is answered 200.
func postOK(t *testing.T, url, body string) {
	t.Helper()
	resp, b := post(t, url, "Bearer "+testKey, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
}

// TestFailoverRepairStaysOnTheTarget: the repair attempts of an answer's invalid tool calls
// (docs/PROTOCOL.md 13.2) go to the target that answered, not back to the first.
func TestFailoverRepairStaysOnTheTarget(t *testing.T) {
	t.Parallel()
	g, sim := failoverGateway(t, []config.Target{{ModelID: testModel}, {ModelID: novaPro}},
		"throttle,model="+testModel, "invalid_tool_args,times=1")
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, policyBody("agent", false, `,"tool_validation":"repair"`))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, "repaired", resp.Header.Get("X-Gateway-Tool-Validation"))
	assert.Equal(t, []string{testModel, novaPro, novaPro}, models(sim.received()))
}
