package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OpenAI's Responses API (docs/PROTOCOL.md 16) over plain HTTP against the simulator:
// requests as Codex and the official clients write them, answers and streams read event
// by event. openai-go's Responses client itself is in responses_test.go (make clients).

// rsItem is an output item, or an input item sent back: the members of each type.
type rsItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitzero"`
	Status    string          `json:"status,omitzero"`
	Role      string          `json:"role,omitzero"`
	Content   jsontext.Value  `json:"content,omitzero"`
	Summary   []rsSummaryPart `json:"summary,omitzero"`
	CallID    string          `json:"call_id,omitzero"`
	Name      string          `json:"name,omitzero"`
	Namespace string          `json:"namespace,omitzero"`
	Arguments string          `json:"arguments,omitzero"`
	Input     string          `json:"input,omitzero"`
	Output    string          `json:"output,omitzero"`
}

type rsSummaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// text is a message item's output text.
func (it rsItem) text(t testing.TB) string {
	t.Helper()
	var parts []struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	require.NoError(t, json.Unmarshal(it.Content, &parts), string(it.Content))
	require.Len(t, parts, 1)
	require.Equal(t, "output_text", parts[0].Type)
	require.NotNil(t, parts[0].Annotations)
	return parts[0].Text
}

type rsResponse struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	CreatedAt         int64    `json:"created_at"`
	Status            string   `json:"status"`
	Model             string   `json:"model"`
	Output            []rsItem `json:"output"`
	Instructions      *string  `json:"instructions"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Store    bool              `json:"store"`
	Metadata map[string]string `json:"metadata"`
	Usage    *struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens *int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
}

// calls are the response's tool calls, function and custom.
func (r rsResponse) calls() []rsItem {
	var out []rsItem
	for _, it := range r.Output {
		if it.Type == "function_call" || it.Type == "custom_tool_call" {
			out = append(out, it)
		}
	}
	return out
}

// message is the response's one message item.
func (r rsResponse) message(t testing.TB) rsItem {
	t.Helper()
	var out []rsItem
	for _, it := range r.Output {
		if it.Type == "message" {
			out = append(out, it)
		}
	}
	require.Len(t, out, 1, "one message in %v", r.Output)
	return out[0]
}

// rsPost posts body to g's /v1/responses with key and returns the answer, read to its end.
func rsPost(t testing.TB, g started, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+g.HTTP+"/v1/responses", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// rsCreate is a unary call that must succeed.
func rsCreate(t testing.TB, g started, body string) (*http.Response, rsResponse) {
	t.Helper()
	resp, b := rsPost(t, g, testKey, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var r rsResponse
	require.NoError(t, json.Unmarshal(b, &r), string(b))
	return resp, r
}

// rsEvent is one event of a stream.
type rsEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	Response       *rsResponse    `json:"response"`
	OutputIndex    *int           `json:"output_index"`
	ItemID         string         `json:"item_id"`
	Item           *rsItem        `json:"item"`
	ContentIndex   *int           `json:"content_index"`
	SummaryIndex   *int           `json:"summary_index"`
	Part           *rsSummaryPart `json:"part"`
	Delta          string         `json:"delta"`
	Text           string         `json:"text"`
	Arguments      string         `json:"arguments"`
	Input          string         `json:"input"`
	Logprobs       jsontext.Value `json:"logprobs"`
}

// rsStream is a stream that must start (200): its events, each "event: <type>" then
// "data: <json>" of the same type, numbered 0, 1, 2, … without gaps; nothing else.
func rsStream(t testing.TB, g started, body string) (*http.Response, []rsEvent) {
	t.Helper()
	resp, b := rsPost(t, g, testKey, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var events []rsEvent
	for i, frame := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		typ, data, ok := strings.Cut(frame, "\n")
		require.True(t, ok, frame)
		typ, ok = strings.CutPrefix(typ, "event: ")
		require.True(t, ok, frame)
		data, ok = strings.CutPrefix(data, "data: ")
		require.True(t, ok, frame)
		var ev rsEvent
		require.NoError(t, json.Unmarshal([]byte(data), &ev), data)
		require.Equal(t, typ, ev.Type, data)
		require.Equal(t, i, ev.SequenceNumber, data)
		events = append(events, ev)
	}
	require.NotContains(t, string(b), "[DONE]")
	return resp, events
}

// rsStreamed is a stream's final response, the one response.completed carries, checked
// against the stream's events: every item added, filled and done in order, the done
// items the response's output.
func rsStreamed(t testing.TB, events []rsEvent) rsResponse {
	t.Helper()
	require.GreaterOrEqual(t, len(events), 3)
	for i, typ := range []string{"response.created", "response.in_progress"} {
		require.Equal(t, typ, events[i].Type)
		require.Equal(t, "in_progress", events[i].Response.Status)
		require.Empty(t, events[i].Response.Output)
		require.Nil(t, events[i].Response.Usage)
	}
	last := events[len(events)-1]
	require.Contains(t, []string{"response.completed", "response.incomplete"}, last.Type)
	var done []rsItem
	var open *rsItem
	var text strings.Builder
	for _, ev := range events[2 : len(events)-1] {
		switch ev.Type {
		case "response.output_item.added":
			require.Nil(t, open, "an item opens after the one before it is done")
			require.Equal(t, len(done), *ev.OutputIndex)
			open = ev.Item
			text.Reset()
		case "response.output_item.done":
			require.NotNil(t, open)
			require.Equal(t, open.ID, ev.Item.ID)
			require.Equal(t, len(done), *ev.OutputIndex)
			switch open.Type {
			case "message":
				assert.Equal(t, text.String(), ev.Item.text(t), "the deltas make the text")
			case "function_call":
				assert.Equal(t, text.String(), ev.Item.Arguments, "the deltas make the arguments")
			case "custom_tool_call":
				assert.Equal(t, text.String(), ev.Item.Input, "the deltas make the input")
			}
			done = append(done, *ev.Item)
			open = nil
		default:
			require.NotNil(t, open, ev.Type)
			require.Equal(t, open.ID, ev.ItemID, ev.Type)
			require.Equal(t, len(done), *ev.OutputIndex, ev.Type)
			if strings.HasSuffix(ev.Type, ".delta") {
				text.WriteString(ev.Delta)
			}
			if ev.Type == "response.reasoning_summary_part.added" {
				text.Reset()
			}
		}
	}
	require.Nil(t, open)
	r := *last.Response
	require.Equal(t, len(done), len(r.Output))
	for i := range done {
		assert.Equal(t, done[i].ID, r.Output[i].ID)
		assert.Equal(t, done[i].Type, r.Output[i].Type)
	}
	return r
}

// rsAsk is one turn, unary or streamed, and its response.
func rsAsk(t testing.TB, g started, streamed bool, body string) (*http.Response, rsResponse) {
	t.Helper()
	if !streamed {
		return rsCreate(t, g, body)
	}
	resp, events := rsStream(t, g, strings.Replace(body, "{", `{"stream":true,`, 1))
	return resp, rsStreamed(t, events)
}

// rsBody is a request body of model, the input items and the tools.
func rsBody(t testing.TB, extra string, input []any, tools string) string {
	t.Helper()
	in, err := json.Marshal(input)
	require.NoError(t, err)
	body := `{"model":"` + testModel + `","store":false,"input":` + string(in)
	if tools != "" {
		body += `,"tools":` + tools
	}
	return body + extra + "}"
}

func rsUser(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

// rsOutput is the output of a call to callID.
func rsOutput(typ, callID, output string) map[string]any {
	return map[string]any{"type": typ, "call_id": callID, "output": output}
}

const rsWeatherTools = `[{"type":"function","name":"get_weather","description":"Weather of a city","strict":true,
	"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
	{"type":"function","name":"get_forecast","description":"Forecast of a city",
	"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

func TestResponsesUnary(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	resp, r := rsCreate(t, g, `{"model":"`+testModel+`","input":"Say hello.","instructions":"Be brief.","metadata":{"run":"1"},"max_output_tokens":200}`)
	assert.Equal(t, "resp_"+resp.Header.Get("X-Request-Id"), r.ID)
	assert.Equal(t, "response", r.Object)
	assert.NotZero(t, r.CreatedAt)
	assert.Equal(t, "completed", r.Status)
	assert.Equal(t, testModel, r.Model)
	assert.Equal(t, "Be brief.", *r.Instructions)
	assert.Equal(t, map[string]string{"run": "1"}, r.Metadata)
	assert.True(t, r.Store, "store is echoed, and honoured")
	assert.Empty(t, resp.Header.Get("X-Gateway-Ignored-Params"))
	assert.Empty(t, resp.Header.Get("X-Gateway-Not-Stored"))
	msg := r.message(t)
	assert.True(t, strings.HasPrefix(msg.ID, "msg_"), msg.ID)
	assert.Equal(t, "completed", msg.Status)
	assert.Equal(t, "assistant", msg.Role)
	assert.NotEmpty(t, msg.text(t))
	require.NotNil(t, r.Usage)
	assert.Positive(t, r.Usage.InputTokens)
	assert.Positive(t, r.Usage.OutputTokens)
	assert.Equal(t, r.Usage.InputTokens+r.Usage.OutputTokens, r.Usage.TotalTokens)
	require.NotNil(t, r.Usage.OutputTokensDetails.ReasoningTokens)

	reqs := sim.converseRequests(t)
	require.Len(t, reqs, 1)
	assert.Equal(t, []any{map[string]any{"text": "Be brief."}}, reqs[0]["system"])
	assert.EqualValues(t, 200, reqs[0]["inferenceConfig"].(map[string]any)["maxTokens"])
	assert.EqualValues(t, 1, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "responses", "route": "chat"}))
}

// TestResponsesStreamLifecycle: a streamed turn with reasoning, text and a tool call, event
// by event as docs/PROTOCOL.md 16 orders them.
func TestResponsesStreamLifecycle(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	_, events := rsStream(t, g, rsBody(t, `,"stream":true,"reasoning":{"effort":"low","summary":"auto"}`,
		[]any{rsUser("Call get_weather for Oslo.")}, rsWeatherTools))
	var types []string
	for _, ev := range events {
		if len(types) > 0 && strings.HasSuffix(ev.Type, ".delta") && types[len(types)-1] == ev.Type {
			continue // deltas in a row, as many as the model's fragments
		}
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.output_item.done",
		"response.completed",
	}, types)
	r := rsStreamed(t, events)
	assert.Equal(t, "completed", r.Status)
	require.Len(t, r.Output, 3)
	reasoning := r.Output[0]
	assert.Equal(t, "reasoning", reasoning.Type)
	assert.True(t, strings.HasPrefix(reasoning.ID, "rs_"), reasoning.ID)
	require.Len(t, reasoning.Summary, 1)
	assert.Equal(t, "summary_text", reasoning.Summary[0].Type)
	assert.NotEmpty(t, reasoning.Summary[0].Text)
	call := r.Output[2]
	assert.Equal(t, "function_call", call.Type)
	assert.True(t, strings.HasPrefix(call.ID, "fc_"), call.ID)
	assert.Equal(t, "completed", call.Status)
	assert.Equal(t, "get_weather", call.Name)
	assert.NotEmpty(t, call.CallID)
	var added rsEvent
	for _, ev := range events {
		if ev.Type == "response.output_item.added" && ev.Item.Type == "function_call" {
			added = ev
		}
	}
	require.NotNil(t, added.Item)
	assert.Equal(t, "in_progress", added.Item.Status)
	assert.Empty(t, added.Item.Arguments)
	assert.Equal(t, call.CallID, added.Item.CallID, "the call's id is known when it opens")
	require.NotNil(t, r.Usage)
	assert.Positive(t, r.Usage.TotalTokens)
}

// TestResponsesFunctionToolLoop: a tool loop as the Agents SDK and Codex run it: each
// response's items go back as input with the outputs of its calls, paired by call_id.
func TestResponsesFunctionToolLoop(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[streamed], func(t *testing.T) {
			t.Parallel()
			sim, g := recordedGateway(t)
			input := []any{rsUser("Call get_weather for Oslo.")}
			_, r := rsAsk(t, g, streamed, rsBody(t, "", input, rsWeatherTools))
			calls := r.calls()
			require.Len(t, calls, 1)
			call := calls[0]
			assert.Equal(t, "get_weather", call.Name)
			var args map[string]any
			require.NoError(t, json.Unmarshal([]byte(call.Arguments), &args))
			assert.Contains(t, args, "city")
			for _, it := range r.Output {
				input = append(input, it)
			}
			input = append(input, rsOutput("function_call_output", call.CallID, `{"temp_c": 4, "sky": "overcast"}`))

			_, r = rsAsk(t, g, streamed, rsBody(t, "", input, rsWeatherTools))
			assert.Empty(t, r.calls())
			assert.Contains(t, r.message(t).text(t), "overcast")

			reqs := sim.converseRequests(t)
			require.Len(t, reqs, 2)
			history := reqs[1]["messages"].([]any)
			require.Len(t, history, 3)
			use := blockOf(t, history[1], "toolUse")
			result := blockOf(t, history[2], "toolResult")
			assert.Equal(t, call.CallID, use["toolUseId"])
			assert.Equal(t, call.CallID, result["toolUseId"])
			assert.Equal(t, "get_weather", use["name"])
		})
	}
}

// TestResponsesCustomTool: a custom tool reaches Bedrock as a function of one string; its
// call comes back as custom_tool_call with that string as input, and goes back the same.
func TestResponsesCustomTool(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[streamed], func(t *testing.T) {
			t.Parallel()
			sim, g := recordedGateway(t)
			const tools = `[{"type":"custom","name":"apply_patch","description":"Apply a patch","format":{"type":"text"}}]`
			input := []any{rsUser("Call apply_patch to fix the typo.")}
			_, r := rsAsk(t, g, streamed, rsBody(t, "", input, tools))
			calls := r.calls()
			require.Len(t, calls, 1)
			call := calls[0]
			assert.Equal(t, "custom_tool_call", call.Type)
			assert.True(t, strings.HasPrefix(call.ID, "ctc_"), call.ID)
			assert.Equal(t, "apply_patch", call.Name)
			assert.NotEmpty(t, call.Input)
			assert.False(t, strings.HasPrefix(call.Input, "{"), "the input is the string, not the arguments: %s", call.Input)
			for _, it := range r.Output {
				input = append(input, it)
			}
			input = append(input, rsOutput("custom_tool_call_output", call.CallID, "patched"))
			_, r = rsAsk(t, g, streamed, rsBody(t, "", input, tools))
			assert.Contains(t, r.message(t).text(t), "patched")

			reqs := sim.converseRequests(t)
			spec := reqs[0]["toolConfig"].(map[string]any)["tools"].([]any)[0].(map[string]any)["toolSpec"].(map[string]any)
			assert.Equal(t, "apply_patch", spec["name"])
			assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"input": map[string]any{"type": "string"}}, "required": []any{"input"}},
				spec["inputSchema"].(map[string]any)["json"])
			use := blockOf(t, reqs[1]["messages"].([]any)[1], "toolUse")
			assert.Equal(t, map[string]any{"input": call.Input}, use["input"], "the input goes back as it came")
		})
	}
}

// TestResponsesNamespaceTools: a namespace's tools reach Bedrock flattened as
// <namespace>__<name>; calls come back under their own name and namespace, and go back the
// same way.
func TestResponsesNamespaceTools(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[streamed], func(t *testing.T) {
			t.Parallel()
			sim, g := recordedGateway(t)
			const tools = `[{"type":"namespace","name":"docs","description":"Documentation tools","tools":[
				{"type":"function","name":"search","description":"Search the docs","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}]}]`
			input := []any{rsUser("Call docs__search for the install guide.")}
			_, r := rsAsk(t, g, streamed, rsBody(t, "", input, tools))
			calls := r.calls()
			require.Len(t, calls, 1)
			assert.Equal(t, "search", calls[0].Name)
			assert.Equal(t, "docs", calls[0].Namespace)
			for _, it := range r.Output {
				input = append(input, it)
			}
			input = append(input, rsOutput("function_call_output", calls[0].CallID, "install with make"))
			_, r = rsAsk(t, g, streamed, rsBody(t, "", input, tools))
			assert.Contains(t, r.message(t).text(t), "install with make")

			reqs := sim.converseRequests(t)
			spec := reqs[0]["toolConfig"].(map[string]any)["tools"].([]any)[0].(map[string]any)["toolSpec"].(map[string]any)
			assert.Equal(t, "docs__search", spec["name"])
			assert.Equal(t, "docs__search", blockOf(t, reqs[1]["messages"].([]any)[1], "toolUse")["name"])
		})
	}
}

// TestResponsesHostedToolDropped: a hosted tool Bedrock cannot run is left out and named
// in x-gateway-dropped (and in the ignored fields); forced by tool_choice it is a 400.
func TestResponsesHostedToolDropped(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	const tools = `[{"type":"web_search","search_context_size":"low"},{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	for _, streamed := range []bool{false, true} {
		resp, r := rsAsk(t, g, streamed, rsBody(t, "", []any{rsUser("Call get_weather for Oslo.")}, tools))
		assert.Equal(t, "tools[0]", resp.Header.Get("X-Gateway-Dropped"))
		assert.Contains(t, resp.Header.Get("X-Gateway-Ignored-Params"), "tools[0]")
		require.Len(t, r.calls(), 1)
	}
	for _, req := range sim.converseRequests(t) {
		offered := req["toolConfig"].(map[string]any)["tools"].([]any)
		require.Len(t, offered, 1)
		assert.Equal(t, "get_weather", offered[0].(map[string]any)["toolSpec"].(map[string]any)["name"])
	}
	resp, b := rsPost(t, g, testKey, rsBody(t, `,"tool_choice":{"type":"web_search"}`, []any{rsUser("search")}, tools))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	e := rsErrorOf(t, b)
	assert.Equal(t, "tool_choice.type", e.Param)
	assert.Equal(t, "unsupported_value", e.Code)
	assert.Contains(t, e.Message, "web_search")
	assert.Len(t, sim.converseRequests(t), 2, "the refused call reached no model")
}

func rsErrorOf(t testing.TB, b []byte) oaError {
	t.Helper()
	var e struct {
		Error oaError `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return e.Error
}

// TestResponsesErrors: refusals in OpenAI's error shape, naming the field of the Responses
// body, whichever layer refused it; stored responses are 404 until the gateway stores them.
func TestResponsesErrors(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	for _, tt := range []struct {
		body        string
		status      int
		param, code string
		message     string
	}{
		{rsBody(t, "", []any{rsUser("hi"), map[string]any{"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{oops"},
			rsOutput("function_call_output", "c1", "x")}, rsWeatherTools), 400, "input[1].arguments", "invalid_value", "input[1].arguments is not valid JSON"},
		{rsBody(t, "", []any{rsUser("hi"), map[string]any{"type": "function_call_output", "output": "x"}}, ""), 400, "input[1].call_id", "invalid_value", "input[1].call_id is missing"},
		{rsBody(t, "", []any{rsUser("hi")}, `[{"type":"function","name":"a"},{"type":"function","name":"b","parameters":{"type":"array"}}]`), 400, "tools[1].parameters", "invalid_value", `root "type" is "object"`},
		{rsBody(t, `,"text":{"format":{"type":"json_schema","name":"bad name","schema":{"type":"object"}}}`, []any{rsUser("hi")}, ""), 400, "text.format.name", "invalid_value", "text.format.name"},
		{rsBody(t, `,"reasoning":{"effort":"extreme"}`, []any{rsUser("hi")}, ""), 400, "reasoning.effort", "invalid_value", "reasoning.effort"},
		{rsBody(t, "", []any{map[string]any{"type": "reasoning", "summary": []any{}, "encrypted_content": "gAAAA"}, rsUser("hi")}, ""), 400, "input[0].encrypted_content", "invalid_value", "not sealed by this gateway"},
		{rsBody(t, "", []any{map[string]any{"type": "item_reference", "id": "msg_1"}}, ""), 404, "input[0]", "not_found", "item_reference"},
		{rsBody(t, `,"previous_response_id":"resp_abc"`, []any{rsUser("hi")}, ""), 404, "previous_response_id", "not_found", `"resp_abc"`},
		{rsBody(t, `,"background":true`, []any{rsUser("hi")}, ""), 400, "background", "unsupported_parameter", "background"},
		{`{"input":{}}`, 400, "input", "invalid_value", "want a string or an array of items, got object"},
	} {
		for _, stream := range []string{"false", "true"} {
			body := strings.Replace(tt.body, "{", `{"stream":`+stream+`,`, 1)
			resp, b := rsPost(t, g, testKey, body)
			require.Equal(t, tt.status, resp.StatusCode, string(b))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			e := rsErrorOf(t, b)
			assert.Equal(t, tt.param, e.Param, string(b))
			assert.Equal(t, tt.code, e.Code, string(b))
			assert.Contains(t, e.Message, tt.message)
		}
	}
	assert.Empty(t, sim.converseRequests(t), "no refused call reached the model")

	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/responses/resp_abc"}, {http.MethodDelete, "/v1/responses/resp_abc"}, {http.MethodGet, "/v1/responses/resp_abc/input_items"},
	} {
		req, err := http.NewRequestWithContext(t.Context(), r.method, "http://"+g.HTTP+r.path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, r.path)
		e := rsErrorOf(t, b)
		assert.Equal(t, "not_found", e.Code)
		assert.Contains(t, e.Message, `"resp_abc"`)
	}
	resp, b := rsPost(t, g, "wrong-key-0123456789", `{"input":"hi"}`)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "invalid_api_key", rsErrorOf(t, b).Code)
	assert.Positive(t, metricValue(t, g, "gateway_requests_total", map[string]string{"transport": "responses", "route": "chat_stream"}))
}

// TestResponsesMidStreamFailure: a failure after the first event ends the stream with
// response.failed carrying the error, numbered on; before it, a plain HTTP error.
func TestResponsesMidStreamFailure(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t, "truncate")
	_, events := rsStream(t, g, rsBody(t, `,"stream":true`, []any{rsUser("Tell me a long story.")}, ""))
	last := events[len(events)-1]
	require.Equal(t, "response.failed", last.Type)
	assert.Equal(t, "failed", last.Response.Status)
	require.NotNil(t, last.Response.Error)
	assert.Equal(t, "upstream_error", last.Response.Error.Code)
	assert.NotEmpty(t, last.Response.Error.Message)
	assert.Equal(t, "response.output_text.delta", events[len(events)-2].Type, "the text so far came first")

	_, g = recordedGateway(t, "throttle")
	resp, b := rsPost(t, g, testKey, rsBody(t, `,"stream":true`, []any{rsUser("hi")}, ""))
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(b))
	assert.Equal(t, "rate_limit_exceeded", rsErrorOf(t, b).Code)
	assert.False(t, bytes.HasPrefix(b, []byte("event:")))
}

// TestResponsesReasoningRestored: a reasoning tool loop whose items go back without their
// blocks (a reasoning item carries only its summary) keeps thinking on: the reasoning cache
// restores the signed blocks for Bedrock (docs/PROTOCOL.md 11.4), which the simulator
// checks as Bedrock does.
func TestResponsesReasoningRestored(t *testing.T) {
	t.Parallel()
	sim, g := recordedGateway(t)
	const extra = `,"reasoning":{"effort":"low","summary":"auto"}`
	input := []any{rsUser("Call get_weather for Oslo.")}
	_, r := rsCreate(t, g, rsBody(t, extra, input, rsWeatherTools))
	require.Equal(t, "reasoning", r.Output[0].Type)
	calls := r.calls()
	require.Len(t, calls, 1)
	for _, it := range r.Output {
		input = append(input, it)
	}
	input = append(input, rsOutput("function_call_output", calls[0].CallID, "sunny"))
	resp, r := rsCreate(t, g, rsBody(t, extra, input, rsWeatherTools))
	assert.Equal(t, "restored", resp.Header.Get("X-Gateway-Thinking"))
	assert.Equal(t, "input[1]", resp.Header.Get("X-Gateway-Ignored-Params"), "the reasoning item sent back")
	assert.Equal(t, "reasoning", r.Output[0].Type)
	history := sim.converseRequests(t)[1]["messages"].([]any)
	assert.NotNil(t, blockOf(t, history[1], "reasoningContent"), "Bedrock got the signed block back")
}

// TestResponsesIgnoredNames: what the translator drops is listed under the name of this
// body's field: reasoning.effort on a model without reasoning, not the chat model's
// reasoning_effort, after what the surface itself dropped (a hosted tool), on a unary
// answer and a stream alike.
func TestResponsesIgnoredNames(t *testing.T) {
	t.Parallel()
	_, g := recordedGateway(t)
	body := `{"model":"meta.llama3-1-70b-instruct-v1:0","input":"hi","store":false,"reasoning":{"effort":"low"},
		"tools":[{"type":"web_search"},{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	for _, streamed := range []bool{false, true} {
		resp, _ := rsAsk(t, g, streamed, body)
		assert.Equal(t, "tools[0],reasoning.effort", resp.Header.Get("X-Gateway-Ignored-Params"), "stream %v", streamed)
	}
}
