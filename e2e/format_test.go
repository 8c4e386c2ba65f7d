package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

// Structured output end to end (docs/PROTOCOL.md 13.3) against the simulator, which answers
// outputConfig with JSON built from the schema and calls a forced tool with arguments built
// from its schema: every surface and stream format gets JSON content, and the synthetic
// json_response tool never shows as a tool call.

const (
	sonnet45   = "us.anthropic.claude-sonnet-4-5-20250929-v1:0" // structured output
	novaPro    = "us.amazon.nova-pro-v1:0"                      // no structured output: the synthetic tool, forced
	llama31    = "meta.llama3-1-70b-instruct-v1:0"              // no streaming tool use, toolChoice auto only
	answerTool = "json_response"
)

// weatherSchema carries a bound Bedrock's outputConfig refuses, which the gateway moves
// into the description on the native path.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number","minimum":-90}},"required":["city","temp_c"],"additionalProperties":false}`

// formatBody is a Nirmata body asking model for weatherSchema; extra are more members.
func formatBody(model, user, extra string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"` + user + `"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` + weatherSchema + `}}` + extra + `}`
}

// formatParams is the same request on the OpenAI surface.
func formatParams(model, user string) oaRequest {
	return oaRequest{Model: model, Messages: []oaMessage{oaUser(user)},
		ResponseFormat: jsontext.Value(`{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` + weatherSchema + `}}`)}
}

// surfaceAnswer is what one surface and stream format returned: the text, the names of the
// tool calls, the finish reason.
type surfaceAnswer struct {
	text   string
	calls  []string
	finish string
}

// everySurface sends a Nirmata body, and params (the same request on the OpenAI surface),
// as each of the seven answers the gateway has: Nirmata unary, JSONL and chunked; OpenAI
// unary and SSE; gRPC unary and stream. It returns each answer by its name.
func everySurface(t *testing.T, g started, body string, params oaRequest, mutate ...func(*llmgatewayv1.ChatRequest)) map[string]surfaceAnswer {
	t.Helper()
	out := map[string]surfaceAnswer{}
	base := "http://" + g.HTTP + "/llm-apps/chat"

	resp, b := post(t, base, "Bearer "+testKey, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var unary chatResponse
	require.NoError(t, json.Unmarshal(b, &unary))
	a := surfaceAnswer{text: *unary.Message, finish: unary.FinishReason}
	for _, c := range unary.ToolCalls {
		a.calls = append(a.calls, c.Function.Name)
	}
	out["nirmata"] = a

	r := streamPost(t, base+"?stream=true", body)
	require.Equal(t, http.StatusOK, r.StatusCode)
	jl := readJSONL(t, r.Body)
	require.Equal(t, "done", jl.last.Type)
	a = surfaceAnswer{text: jl.text, finish: jl.last.FinishReason}
	for _, c := range jl.calls {
		a.calls = append(a.calls, c.name)
	}
	out["nirmata jsonl"] = a

	r = streamPost(t, base+"?chunked=true", body)
	require.Equal(t, http.StatusOK, r.StatusCode)
	out["nirmata chunked"] = readChunkedAnswer(t, r.Body)

	_, completion := oaChat(t, g, testKey, params)
	out["openai"] = openAIAnswer(completion.Choices[0].Message, completion.Choices[0].FinishReason)

	_, s := oaStream(t, g, testKey, params)
	require.Nil(t, s.failure)
	out["openai sse"] = openAIAnswer(s.answer, s.finish)

	in := grpcRequest(t, body)
	for _, m := range mutate {
		m(in)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	chatClient := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC))
	res, err := chatClient.Chat(ctx, in)
	require.NoError(t, err)
	a = surfaceAnswer{text: res.GetMessage(), finish: finishName(res.GetFinishReason())}
	for _, c := range res.GetToolCalls() {
		a.calls = append(a.calls, c.GetFunction().GetName())
	}
	out["grpc"] = a

	st, err := chatClient.ChatStream(ctx, in)
	require.NoError(t, err)
	a = surfaceAnswer{}
	for {
		ev, err := st.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		switch {
		case ev.GetContent() != nil:
			a.text += ev.GetContent().GetText()
		case ev.GetToolCall() != nil && ev.GetToolCall().GetId() != "":
			a.calls = append(a.calls, ev.GetToolCall().GetName())
		case ev.GetDone() != nil:
			a.finish = finishName(ev.GetDone().GetFinishReason())
		}
	}
	out["grpc stream"] = a
	return out
}

func openAIAnswer(m oaAnswer, finish string) surfaceAnswer {
	a := surfaceAnswer{text: m.Content, finish: finish}
	for _, c := range m.ToolCalls {
		a.calls = append(a.calls, c.Function.Name)
	}
	return a
}

func finishName(f llmgatewayv1.FinishReason) string {
	return strings.ToLower(strings.TrimPrefix(f.String(), "FINISH_REASON_"))
}

// readChunkedAnswer reads a chunked stream as readChunked does, and the finish reason of its
// Done line.
func readChunkedAnswer(t *testing.T, r io.Reader) surfaceAnswer {
	t.Helper()
	var a surfaceAnswer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line chunkedLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		switch line.Type {
		case "Text":
			a.text += line.Data
		case "ToolStart":
			var tool struct {
				ToolCall gollmToolCall `json:"tool_call"`
			}
			require.NoError(t, json.Unmarshal([]byte(line.Data), &tool))
			a.calls = append(a.calls, tool.ToolCall.Function.Name)
		case "Done":
			var done jsonlLine
			require.NoError(t, json.Unmarshal([]byte(line.Data), &done))
			a.finish = done.FinishReason
		case "Error":
			t.Fatalf("chunked stream failed: %s", line.Data)
		}
	}
	require.NoError(t, sc.Err())
	return a
}

// requireWeatherJSON checks every answer is one JSON object of weatherSchema, with no tool
// call and finish "stop".
func requireWeatherJSON(t *testing.T, answers map[string]surfaceAnswer) {
	t.Helper()
	require.Len(t, answers, 7)
	for name, a := range answers {
		var w struct {
			City  *string  `json:"city"`
			TempC *float64 `json:"temp_c"`
		}
		dec := json.NewDecoder(strings.NewReader(a.text))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&w), "%s: %q", name, a.text)
		assert.False(t, dec.More(), "%s: one JSON value", name)
		assert.NotNil(t, w.City, name)
		assert.NotNil(t, w.TempC, name)
		assert.Empty(t, a.calls, "%s: no tool call leaks", name)
		assert.Equal(t, "stop", a.finish, name)
	}
}

// TestStructuredOutputEmulated: on models without structured output the schema travels as
// the forced json_response tool, and every surface answers its input as JSON content.
func TestStructuredOutputEmulated(t *testing.T) {
	t.Parallel()
	for _, model := range []string{testModel, novaPro} {
		t.Run(model, func(t *testing.T) {
			sim, g := recordedGateway(t)
			const user = "Weather in Paris?"
			requireWeatherJSON(t, everySurface(t, g, formatBody(model, user, ""), formatParams(model, user)))

			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 7)
			for i, r := range reqs {
				tc := r["toolConfig"].(map[string]any)
				tools := tc["tools"].([]any)
				require.Len(t, tools, 1, "request %d", i)
				spec := tools[0].(map[string]any)["toolSpec"].(map[string]any)
				assert.Equal(t, answerTool, spec["name"])
				assert.JSONEq(t, weatherSchema, mustJSON(t, spec["inputSchema"].(map[string]any)["json"]), "the schema as the client wrote it")
				assert.Equal(t, map[string]any{"tool": map[string]any{"name": answerTool}}, tc["toolChoice"], "forced: no tools of the client's, no thinking")
				assert.NotContains(t, r, "outputConfig")
				assert.Equal(t, reqs[0], r, "every surface sends the same request")
			}
		})
	}
}

// TestStructuredOutputNative: Claude Sonnet 4.5 gets outputConfig.textFormat with the schema
// sanitised (the bound moved into the description, keys sorted) as a string.
func TestStructuredOutputNative(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	const user = "Weather in Paris?"
	// gRPC sends its schema as a Struct here: the same bytes reach Bedrock.
	schema := &structpb.Struct{}
	require.NoError(t, schema.UnmarshalJSON([]byte(weatherSchema)))
	asStruct := func(in *llmgatewayv1.ChatRequest) {
		in.ResponseFormat.JsonSchema.SchemaJson, in.ResponseFormat.JsonSchema.Schema = "", schema
	}
	requireWeatherJSON(t, everySurface(t, g, formatBody(sonnet45, user, ""), formatParams(sonnet45, user), asStruct))

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 7)
	want := map[string]any{"textFormat": map[string]any{"type": "json_schema", "structure": map[string]any{"jsonSchema": map[string]any{
		"name": "weather",
		"schema": `{"additionalProperties":false,"properties":{"city":{"type":"string"},"temp_c":{"description":"minimum: -90","type":"number"}},` +
			`"required":["city","temp_c"],"type":"object"}`,
	}}}}
	for i, r := range reqs {
		assert.Equal(t, want, r["outputConfig"], "request %d", i)
		assert.NotContains(t, r, "toolConfig")
		assert.NotContains(t, r, "system")
	}
}

// TestStructuredOutputWithClientTools: the answer tool is offered beside the client's tools
// under auto, with a note; when the model calls both in one turn, the client's call comes
// back as a call and the answer as content; with parallel calls off, the answer tool is not
// the one call kept.
func TestStructuredOutputWithClientTools(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	// The simulator calls the tools a user names; a real model calls json_response on its
	// own, told by the system note.
	const user = "Call get_weather and json_response."
	tools := `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	params := formatParams(testModel, user)
	var getWeather oaTool
	getWeather.Type, getWeather.Function.Name = "function", "get_weather"
	getWeather.Function.Parameters = jsontext.Value(`{"type":"object","properties":{"city":{"type":"string"}}}`)
	params.Tools = []oaTool{getWeather}
	answers := everySurface(t, g, formatBody(testModel, user, tools), params)
	for name, a := range answers {
		assert.True(t, json.Valid([]byte(a.text)), "%s: the content is the answer tool's input alone: %q", name, a.text)
		assert.Equal(t, []string{"get_weather"}, a.calls, name)
		assert.Equal(t, "tool_calls", a.finish, name)
	}
	r := sim.converseRequests(t)[0]
	tc := r["toolConfig"].(map[string]any)
	assert.NotContains(t, tc, "toolChoice", "auto")
	assert.Len(t, tc["tools"], 2)
	system := r["system"].([]any)
	assert.Equal(t, map[string]any{"text": "When you give your final answer, give it by calling the tool json_response with the answer as its input, not as text."},
		system[len(system)-1])

	// Parallel calls off: Claude calls one tool per answer, the first named; json_response is
	// not a client call, so it is the answer, and no call is dropped.
	resp, body := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey,
		formatBody(testModel, "Call json_response and get_weather.", tools+`,"parallel_tool_calls":false`))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var out chatResponse
	require.NoError(t, json.Unmarshal(body, &out))
	assert.True(t, json.Valid([]byte(*out.Message)), *out.Message)
	assert.Empty(t, out.ToolCalls)
	assert.Equal(t, "stop", out.FinishReason)
}

// TestStructuredOutputBudgetAndNone: with the tool budget spent, or tool_choice "none", the
// client's tools are not offered and the answer tool is forced, so the answer still comes
// as JSON.
func TestStructuredOutputBudgetAndNone(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	tools := `,"tools":[{"type":"function","function":{"name":"get_weather"}}]`
	spent := `{"model":"` + testModel + `","max_tool_rounds":1,"messages":[{"role":"user","content":"Weather in Paris? Use get_weather."},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"21C"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"weather","schema":` + weatherSchema + `}}` + tools + `}`
	for name, body := range map[string]string{
		"budget spent": spent,
		"none":         formatBody(testModel, "Weather in Paris? Use get_weather.", tools+`,"tool_choice":"none"`),
	} {
		resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		var out chatResponse
		require.NoError(t, json.Unmarshal(b, &out))
		assert.Empty(t, out.ToolCalls, name)
		assert.Equal(t, "stop", out.FinishReason, name)
		if name == "budget spent" {
			// The simulator quotes tool results whatever toolChoice forces, where Bedrock
			// would call the forced tool; the request below is what counts.
			assert.Equal(t, "exhausted", resp.Header.Get("X-Gateway-Tool-Budget"))
			continue
		}
		assert.True(t, json.Valid([]byte(*out.Message)), "%s: %s", name, *out.Message)
	}
	for _, r := range sim.converseRequests(t) {
		assert.Equal(t, map[string]any{"tool": map[string]any{"name": answerTool}}, r["toolConfig"].(map[string]any)["toolChoice"])
	}
}

// TestStructuredOutputWithThinking: with thinking on, the answer tool is not forced (Claude
// refuses a forced tool with thinking, BEDROCK.md G10): it is offered under auto with the
// note, and thinking stays on.
func TestStructuredOutputWithThinking(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey,
		formatBody(testModel, "Weather in Paris? Answer with json_response.", `,"reasoning_effort":"low"`))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Empty(t, resp.Header.Get("X-Gateway-Thinking"), "thinking not turned off")
	var out struct {
		chatResponse
		Reasoning string `json:"reasoning"`
	}
	require.NoError(t, json.Unmarshal(b, &out))
	assert.True(t, json.Valid([]byte(*out.Message)), *out.Message)
	assert.Empty(t, out.ToolCalls)
	assert.NotEmpty(t, out.Reasoning)
	r := sim.converseRequests(t)[0]
	assert.NotContains(t, r["toolConfig"], "toolChoice")
	assert.Contains(t, r["additionalModelRequestFields"], "thinking")
	system := r["system"].([]any)
	assert.Equal(t, map[string]any{"text": "Give your answer by calling the tool json_response with the answer as its input, not as text; it is the one tool you may call."},
		system[len(system)-1])
}

// TestStructuredOutputWithoutStreamingTools: a model without streaming tool use is answered
// through Converse and replayed as a stream; the answer tool's input is still the content.
func TestStructuredOutputWithoutStreamingTools(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	body := formatBody(llama31, "Weather in Paris? Answer with json_response.", "")
	r := streamPost(t, "http://"+g.HTTP+"/llm-apps/chat?stream=true", body)
	require.Equal(t, http.StatusOK, r.StatusCode)
	jl := readJSONL(t, r.Body)
	assert.True(t, json.Valid([]byte(jl.text)), jl.text)
	assert.Empty(t, jl.calls)
	assert.Equal(t, "stop", jl.last.FinishReason)
}

// TestStructuredOutputRefused: a schema Bedrock refuses anyway is a 400 with Bedrock's text
// and the schema's path, on every surface.
func TestStructuredOutputRefused(t *testing.T) {
	t.Parallel()
	const refusal = "output_config.format.schema: For 'string' type, property pattern is not supported"
	g := fakeBedrock(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "ValidationException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"message":%q}`, refusal)
	})
	const user = "Weather in Paris?"
	_, apiErr := oaRefusal(t, g, testKey, formatParams(sonnet45, user), http.StatusBadRequest)
	assert.Equal(t, "response_format.json_schema.schema", apiErr.Param)
	assert.Equal(t, refusal, apiErr.Message)
	assert.Equal(t, "invalid_value", apiErr.Code)

	streamed := formatParams(sonnet45, user)
	streamed.Stream = true
	_, apiErr = oaRefusal(t, g, testKey, streamed, http.StatusBadRequest)
	assert.Equal(t, "response_format.json_schema.schema", apiErr.Param)

	resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, formatBody(sonnet45, user, ""))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var e errorBody
	require.NoError(t, json.Unmarshal(b, &e))
	assert.Equal(t, refusal, e.Error)

	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, grpcRequest(t, formatBody(sonnet45, user, "")))
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, refusal, status.Convert(err).Message())
}

// TestResponseFormatErrors: a response_format the gateway cannot honour is refused before
// Bedrock on every surface, naming the field.
func TestResponseFormatErrors(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	for _, tt := range []struct {
		name, format, param, msg string
	}{
		{"an unknown type", `{"type":"xml"}`, "response_format.type",
			`invalid request: response_format.type "xml" is not one of "text", "json_object", "json_schema"`},
		{"an array root", `{"type":"json_schema","json_schema":{"name":"c","schema":{"type":"array","items":{"type":"string"}}}}`,
			"response_format.json_schema.schema", `invalid request: response_format.json_schema.schema must be a JSON Schema whose root "type" is "object", not "array"`},
		{"a schema that is not an object", `{"type":"json_schema","json_schema":{"name":"c","schema":"{}"}}`,
			"response_format.json_schema.schema", `invalid request body: response_format.json_schema.schema: want an object, got string`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			params := oaRequest{Model: testModel, Messages: []oaMessage{oaUser("hi")}, ResponseFormat: jsontext.Value(tt.format)}
			_, apiErr := oaRefusal(t, g, testKey, params, http.StatusBadRequest)
			assert.Equal(t, tt.param, apiErr.Param)
			assert.Equal(t, tt.msg, apiErr.Message)

			body := `{"messages":[{"role":"user","content":"hi"}],"response_format":` + tt.format + `}`
			resp, b := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var e errorBody
			require.NoError(t, json.Unmarshal(b, &e))
			assert.Equal(t, tt.msg, e.Error)
		})
	}
	// gRPC: its schema_json is text, so a non-object schema is the translator's refusal.
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey)
	_, err := llmgatewayv1.NewChatServiceClient(grpcConn(t, g.GRPC)).Chat(ctx, &llmgatewayv1.ChatRequest{
		Messages:       []*llmgatewayv1.Message{{Role: llmgatewayv1.Role_ROLE_USER, Content: "hi"}},
		ResponseFormat: &llmgatewayv1.ResponseFormat{Type: "json_schema", JsonSchema: &llmgatewayv1.JSONSchemaFormat{SchemaJson: `["object"]`}}})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, "invalid request: response_format.json_schema.schema must be a JSON object, not an array", status.Convert(err).Message())
	assert.Empty(t, sim.converseRequests(t), "nothing reached Bedrock")
}

// TestJSONObject: json_object is a system instruction; the simulator's greeting is not a
// JSON object, so each answer comes back unchanged and is logged and counted.
func TestJSONObject(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	body := `{"model":"` + testModel + `","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`
	params := oaRequest{Model: testModel, Messages: []oaMessage{oaUser("hi")}, ResponseFormat: jsontext.Value(`{"type":"json_object"}`)}
	for name, a := range everySurface(t, g, body, params) {
		assert.Equal(t, "Hello from the Bedrock simulator. You said: hi", a.text, name)
	}
	for _, r := range sim.converseRequests(t) {
		assert.Equal(t, []any{map[string]any{"text": "Answer with one JSON object and nothing else: no text before or after it, no code fence."}}, r["system"])
	}
	// A stream is counted once its handler returns, which may be just after the client read
	// the last event.
	require.Eventually(t, func() bool {
		return metricValue(t, g, "gateway_response_format_invalid_total", map[string]string{"model": testModel}) == 7
	}, 5*time.Second, 10*time.Millisecond)
	entries := g.logs.FilterMessage("answer is not one JSON object").AllUntimed()
	require.Len(t, entries, 7)
	assert.NotContains(t, entries[0].ContextMap(), "text")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
