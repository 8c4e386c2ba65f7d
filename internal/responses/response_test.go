package responses

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/fault"
)

var testHead = head{requestID: "r1", createdAt: 1767225600, model: "sonnet"}

// testCall is a decoded request with a function, a custom and a namespaced tool.
func testCall(t *testing.T, extra string) *call {
	t.Helper()
	c, err := decodeRequest([]byte(`{"model":"sonnet","input":"go","store":false,"tools":[{"type":"function","name":"save"},
		{"type":"custom","name":"patch"},{"type":"namespace","name":"fs","tools":[{"type":"function","name":"read"}]}]`+extra+`}`), nil)
	require.NoError(t, err)
	return c
}

// settings is the echo of testCall's request in every response.
const settings = `"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"%s","store":false,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[{"type":"function","name":"save"},
		{"type":"custom","name":"patch"},{"type":"namespace","name":"fs","tools":[{"type":"function","name":"read"}]}],"top_p":1,"truncation":"disabled"`

func TestAppendResponse(t *testing.T) {
	t.Parallel()
	const start = `{"id":"resp_r1","object":"response","created_at":1767225600,"status":"%s","background":false,"error":null,"incomplete_details":%s,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"sonnet","output":`
	usage := chat.Usage{PromptTokens: 1200, CompletionTokens: 40, TotalTokens: 1240, CacheReadTokens: 1000, CacheWriteTokens: 100}
	const usageJSON = `"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1000},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1240}`
	const noUsage = `"usage":{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}`
	tests := []struct {
		name  string
		extra string
		resp  chat.Response
		want  string
	}{
		{"tool calls of each kind, under the client's names", "", chat.Response{Text: "On it.", ToolCalls: []chat.ToolCall{
			{ID: "tooluse_a", Name: "save", Arguments: `{"f":1}`},
			{ID: "tooluse_b", Name: "patch", Arguments: `{"input":"*** Begin"}`},
			{ID: "tooluse_c", Name: "fs__read", Arguments: `{}`},
		}, Finish: chat.FinishToolCalls, Usage: usage, ServiceTier: "priority"},
			fmt.Sprintf(start, "completed", "null") + `[` +
				`{"type":"message","id":"msg_r1_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"On it.","annotations":[],"logprobs":[]}]},` +
				`{"type":"function_call","id":"fc_r1_1","status":"completed","arguments":"{\"f\":1}","call_id":"tooluse_a","name":"save"},` +
				`{"type":"custom_tool_call","id":"ctc_r1_2","call_id":"tooluse_b","name":"patch","input":"*** Begin"},` +
				`{"type":"function_call","id":"fc_r1_3","status":"completed","arguments":"{}","call_id":"tooluse_c","name":"read","namespace":"fs"}],` +
				fmt.Sprintf(settings, "priority") + `,` + usageJSON + `,"user":null,"metadata":{}}`},
		{"reasoning with summary parts, one for each block with text", `,"reasoning":{"effort":"low","summary":"auto"}`, chat.Response{
			Text: "Hi", Reasoning: []chat.ReasoningBlock{{Text: "a", Signature: "s"}, {Redacted: true, Data: "ZA=="}, {Text: "b", Signature: "t"}}, Finish: chat.FinishStop},
			fmt.Sprintf(start, "completed", "null") + `[` +
				`{"type":"reasoning","id":"rs_r1_0","summary":[{"type":"summary_text","text":"a"},{"type":"summary_text","text":"b"}]},` +
				`{"type":"message","id":"msg_r1_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[],"logprobs":[]}]}],` +
				strings.Replace(fmt.Sprintf(settings, "auto"), `{"effort":null,"summary":null}`, `{"effort":"low","summary":"auto"}`, 1) + `,` + noUsage + `,"user":null,"metadata":{}}`},
		{"reasoning without summary: no parts; cut at max_output_tokens: incomplete", `,"reasoning":{"effort":"low"}`, chat.Response{
			Reasoning: []chat.ReasoningBlock{{Text: "a", Signature: "s"}}, Finish: chat.FinishLength},
			fmt.Sprintf(start, "incomplete", `{"reason":"max_output_tokens"}`) + `[` +
				`{"type":"reasoning","id":"rs_r1_0","summary":[]},` +
				`{"type":"message","id":"msg_r1_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"","annotations":[],"logprobs":[]}]}],` +
				strings.Replace(fmt.Sprintf(settings, "auto"), `{"effort":null,"summary":null}`, `{"effort":"low","summary":null}`, 1) + `,` + noUsage + `,"user":null,"metadata":{}}`},
		{"filtered: incomplete", "", chat.Response{Text: "x", Finish: chat.FinishContentFilter},
			fmt.Sprintf(start, "incomplete", `{"reason":"content_filter"}`) + `[` +
				`{"type":"message","id":"msg_r1_0","status":"completed","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[],"logprobs":[]}]}],` +
				fmt.Sprintf(settings, "auto") + `,` + noUsage + `,"user":null,"metadata":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testCall(t, tt.extra)
			assert.Equal(t, compact(t, tt.want), string(appendAnswer(c, &tt.resp)))
		})
	}
}

// TestResponseEcho: the request's settings come back as the client sent them.
func TestResponseEcho(t *testing.T) {
	t.Parallel()
	c, err := decodeRequest([]byte(`{"model":"m","input":"x","instructions":"be brief","max_output_tokens":50,"max_tool_calls":2,
		"temperature":0.2,"top_p":0.5,"parallel_tool_calls":false,"prompt_cache_key":"k","user":"u","safety_identifier":"s","service_tier":"flex",
		"metadata":{"a":"b"},"text":{"format":{"type":"json_object"}},"tool_choice":"required","truncation":"auto","reasoning":{"effort":"high","summary":"detailed"}}`), nil)
	require.NoError(t, err)
	r := c.response(&testHead)
	b, err := json.Marshal(&r)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	for k, want := range map[string]any{
		"instructions": "be brief", "max_output_tokens": 50.0, "max_tool_calls": 2.0, "temperature": 0.2, "top_p": 0.5,
		"parallel_tool_calls": false, "prompt_cache_key": "k", "user": "u", "safety_identifier": "s", "service_tier": "flex",
		"metadata": map[string]any{"a": "b"}, "text": map[string]any{"format": map[string]any{"type": "json_object"}},
		"tool_choice": "required", "truncation": "auto", "reasoning": map[string]any{"effort": "high", "summary": "detailed"},
		"store": true, "status": "in_progress", "output": []any{}, "usage": nil, "tools": []any{},
	} {
		assert.Equal(t, want, got[k], k)
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	v := jsontext.Value(s)
	require.NoError(t, v.Compact(), s)
	return string(v)
}

// sse is one event of a stream as the client reads it.
type sse struct {
	typ  string
	data map[string]any
}

// readSSE splits a stream into its events; each must be "event: <type>" and "data: <json>"
// whose type is the same, with sequence numbers 0, 1, 2, … without gaps.
func readSSE(t *testing.T, b []byte) []sse {
	t.Helper()
	var out []sse
	for i, frame := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		typ, data, ok := strings.Cut(frame, "\n")
		require.True(t, ok, frame)
		typ, ok = strings.CutPrefix(typ, "event: ")
		require.True(t, ok, frame)
		data, ok = strings.CutPrefix(data, "data: ")
		require.True(t, ok, frame)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &m), data)
		require.Equal(t, typ, m["type"], data)
		require.Equal(t, float64(i), m["sequence_number"], data)
		out = append(out, sse{typ, m})
	}
	return out
}

func stream(t *testing.T, c *call, events []chat.Event) ([]byte, *streamer) {
	t.Helper()
	s := c.streamer(testHead, "")
	var b []byte
	for i := range events {
		b = s.appendEvent(b, &events[i])
	}
	return b, s
}

// TestStreamLifecycle: each kind of output item opens, fills and closes in order, with its
// own events, and the last event carries the whole response.
func TestStreamLifecycle(t *testing.T) {
	t.Parallel()
	c := testCall(t, `,"reasoning":{"effort":"low","summary":"auto"}`)
	b, _ := stream(t, c, []chat.Event{
		{Kind: chat.EventReasoning, Text: "Think"},
		{Kind: chat.EventReasoning, Text: "ing."},
		{Kind: chat.EventReasoningBlock, Block: chat.ReasoningBlock{Text: "Thinking.", Signature: "s"}},
		{Kind: chat.EventReasoningBlock, Block: chat.ReasoningBlock{Redacted: true, Data: "ZA=="}},
		{Kind: chat.EventContent, Text: "On "},
		{Kind: chat.EventContent, Text: ""},
		{Kind: chat.EventContent, Text: "it."},
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{ID: "tooluse_a", Name: "save"}},
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `{"f":`}},
		{Kind: chat.EventToolCall, Index: 0, ToolCall: chat.ToolCall{Arguments: `1}`}},
		{Kind: chat.EventToolCallEnd, Index: 0},
		{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{ID: "tooluse_b", Name: "patch"}},
		{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{Arguments: `{"input":"*** `}},
		{Kind: chat.EventToolCall, Index: 1, ToolCall: chat.ToolCall{Arguments: `Begin"}`}},
		{Kind: chat.EventToolCallEnd, Index: 1},
		{Kind: chat.EventToolCall, Index: 2, ToolCall: chat.ToolCall{ID: "tooluse_c", Name: "fs__read"}},
		{Kind: chat.EventToolCall, Index: 2, ToolCall: chat.ToolCall{Arguments: `{}`}},
		{Kind: chat.EventToolCallEnd, Index: 2},
		{Kind: chat.EventDone, Finish: chat.FinishToolCalls, Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CacheReadTokens: 4}},
	})
	events := readSSE(t, b)
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	types := make([]string, len(events))
	for i, e := range events {
		types[i] = e.typ
	}
	require.Equal(t, want, types)
	for _, i := range []int{0, 1} {
		r := events[i].data["response"].(map[string]any)
		assert.Equal(t, "in_progress", r["status"])
		assert.Equal(t, []any{}, r["output"])
		assert.Nil(t, r["usage"])
		assert.Equal(t, "resp_r1", r["id"])
	}
	item := func(i int) map[string]any { return events[i].data["item"].(map[string]any) }
	assert.Equal(t, map[string]any{"type": "reasoning", "id": "rs_r1_0", "summary": []any{}}, item(2))
	assert.Equal(t, map[string]any{"type": "summary_text", "text": ""}, events[3].data["part"])
	assert.Equal(t, "Think", events[4].data["delta"])
	assert.Equal(t, 0.0, events[4].data["summary_index"])
	assert.Equal(t, "rs_r1_0", events[4].data["item_id"])
	assert.Equal(t, "Thinking.", events[6].data["text"])
	assert.Equal(t, map[string]any{"type": "reasoning", "id": "rs_r1_0", "summary": []any{map[string]any{"type": "summary_text", "text": "Thinking."}}}, item(8))
	assert.Equal(t, map[string]any{"type": "message", "id": "msg_r1_1", "status": "in_progress", "role": "assistant", "content": []any{}}, item(9))
	assert.Equal(t, map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}, events[10].data["part"])
	assert.Equal(t, map[string]any{"type": "response.output_text.delta", "sequence_number": 11.0, "item_id": "msg_r1_1", "output_index": 1.0,
		"content_index": 0.0, "delta": "On ", "logprobs": []any{}}, events[11].data)
	assert.Equal(t, "On it.", events[13].data["text"])
	assert.Equal(t, "On it.", events[14].data["part"].(map[string]any)["text"])
	assert.Equal(t, map[string]any{"type": "function_call", "id": "fc_r1_2", "status": "in_progress", "arguments": "", "call_id": "tooluse_a", "name": "save"}, item(16))
	assert.Equal(t, `{"f":`, events[17].data["delta"])
	assert.Equal(t, `{"f":1}`, events[19].data["arguments"])
	assert.Equal(t, map[string]any{"type": "function_call", "id": "fc_r1_2", "status": "completed", "arguments": `{"f":1}`, "call_id": "tooluse_a", "name": "save"}, item(20))
	assert.Equal(t, map[string]any{"type": "custom_tool_call", "id": "ctc_r1_3", "call_id": "tooluse_b", "name": "patch", "input": ""}, item(21))
	assert.Equal(t, "*** Begin", events[22].data["delta"])
	assert.Equal(t, "*** Begin", events[23].data["input"])
	assert.Equal(t, "*** Begin", item(24)["input"])
	assert.Equal(t, map[string]any{"type": "function_call", "id": "fc_r1_4", "status": "completed", "arguments": `{}`, "call_id": "tooluse_c", "name": "read", "namespace": "fs"}, item(28))
	r := events[29].data["response"].(map[string]any)
	assert.Equal(t, "completed", r["status"])
	output := r["output"].([]any)
	require.Len(t, output, 5)
	for i, at := range []int{8, 15, 20, 24, 28} {
		assert.Equal(t, item(at), output[i], "the last event's items are the items done")
	}
	assert.Equal(t, map[string]any{"input_tokens": 10.0, "input_tokens_details": map[string]any{"cached_tokens": 4.0}, "output_tokens": 5.0,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0.0}, "total_tokens": 15.0}, r["usage"])
}

// TestStreamShapes: the stream and the unary answer of the same events have the same
// output items; a stream without text or calls still has its message; a cut stream ends
// incomplete; reasoning without summary has no summary events.
func TestStreamShapes(t *testing.T) {
	t.Parallel()
	last := func(t *testing.T, b []byte) sse {
		events := readSSE(t, b)
		return events[len(events)-1]
	}
	t.Run("empty answer", func(t *testing.T) {
		t.Parallel()
		c := testCall(t, "")
		b, _ := stream(t, c, []chat.Event{{Kind: chat.EventDone, Finish: chat.FinishLength}})
		events := readSSE(t, b)
		types := []string{}
		for _, e := range events {
			types = append(types, e.typ)
		}
		assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
			"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"}, types)
		r := last(t, b).data["response"].(map[string]any)
		assert.Equal(t, "incomplete", r["status"])
		assert.Equal(t, map[string]any{"reason": "max_output_tokens"}, r["incomplete_details"])
		unary := appendAnswer(c, &chat.Response{Finish: chat.FinishLength})
		var u map[string]any
		require.NoError(t, json.Unmarshal(unary, &u))
		assert.Equal(t, u["output"], r["output"])
	})
	t.Run("reasoning without summary", func(t *testing.T) {
		t.Parallel()
		c := testCall(t, `,"reasoning":{"effort":"low"}`)
		b, _ := stream(t, c, []chat.Event{
			{Kind: chat.EventReasoning, Text: "x"},
			{Kind: chat.EventReasoningBlock, Block: chat.ReasoningBlock{Text: "x", Signature: "s"}},
			{Kind: chat.EventContent, Text: "y"},
			{Kind: chat.EventDone, Finish: chat.FinishStop},
		})
		assert.NotContains(t, string(b), "reasoning_summary")
		r := last(t, b).data["response"].(map[string]any)
		unary := appendAnswer(c, &chat.Response{Text: "y", Reasoning: []chat.ReasoningBlock{{Text: "x", Signature: "s"}}, Finish: chat.FinishStop})
		var u map[string]any
		require.NoError(t, json.Unmarshal(unary, &u))
		assert.Equal(t, u["output"], r["output"])
	})
	t.Run("tool_search call", func(t *testing.T) {
		t.Parallel()
		c, err := decodeRequest([]byte(`{"input":"go","store":false,"tools":[{"type":"tool_search","execution":"client","parameters":{"type":"object"}}]}`), nil)
		require.NoError(t, err)
		b, _ := stream(t, c, []chat.Event{
			{Kind: chat.EventToolCall, ToolCall: chat.ToolCall{ID: "tooluse_s", Name: "tool_search"}},
			{Kind: chat.EventToolCall, ToolCall: chat.ToolCall{Arguments: `{"query":`}},
			{Kind: chat.EventToolCall, ToolCall: chat.ToolCall{Arguments: `"cal","limit":2}`}},
			{Kind: chat.EventToolCallEnd},
			{Kind: chat.EventDone, Finish: chat.FinishToolCalls},
		})
		events := readSSE(t, b)
		types := []string{}
		for _, e := range events {
			types = append(types, e.typ)
		}
		assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done", "response.completed"}, types,
			"no argument deltas: Codex reads the call from output_item.done")
		assert.Equal(t, map[string]any{"type": "tool_search_call", "id": "tsc_r1_0", "call_id": "tooluse_s", "status": "in_progress",
			"execution": "client", "arguments": map[string]any{}}, events[2].data["item"])
		done := map[string]any{"type": "tool_search_call", "id": "tsc_r1_0", "call_id": "tooluse_s", "status": "completed",
			"execution": "client", "arguments": map[string]any{"query": "cal", "limit": 2.0}}
		assert.Equal(t, done, events[3].data["item"])
		unary := appendAnswer(c, &chat.Response{ToolCalls: []chat.ToolCall{{ID: "tooluse_s", Name: "tool_search", Arguments: `{"query":"cal","limit":2}`}}, Finish: chat.FinishToolCalls})
		var u map[string]any
		require.NoError(t, json.Unmarshal(unary, &u))
		assert.Equal(t, []any{done}, u["output"])
		assert.Equal(t, u["output"], last(t, b).data["response"].(map[string]any)["output"])
	})
}

// TestStreamFailed: a failure after the first event is response.failed, numbered on, with
// the items done so far and the error's code and message.
func TestStreamFailed(t *testing.T) {
	t.Parallel()
	c := testCall(t, "")
	b, s := stream(t, c, []chat.Event{{Kind: chat.EventContent, Text: "par"}})
	b = s.appendError(b, fault.Failure{Kind: fault.KindUpstream, Message: "upstream error: the stream was cut"})
	events := readSSE(t, b)
	failed := events[len(events)-1]
	assert.Equal(t, "response.failed", failed.typ)
	r := failed.data["response"].(map[string]any)
	assert.Equal(t, "failed", r["status"])
	assert.Equal(t, map[string]any{"code": "upstream_error", "message": "upstream error: the stream was cut"}, r["error"])
	assert.Equal(t, []any{}, r["output"], "the open message was not done")
}

// TestFailedCodes: every kind of failure has a code in response.failed: OpenAI's code of
// its kind, its reason, or the contract's code where OpenAI's table has none.
func TestFailedCodes(t *testing.T) {
	t.Parallel()
	c := testCall(t, "")
	for k := range fault.Kinds {
		f := fault.Failure{Kind: fault.Kind(k), Message: "m"}
		b := c.streamer(testHead, "").appendError(nil, f)
		r := readSSE(t, b)[0].data["response"].(map[string]any)
		code := r["error"].(map[string]any)["code"]
		assert.NotEmpty(t, code, f.Kind.Code())
	}
	b := c.streamer(testHead, "").appendError(nil, fault.Failure{Kind: fault.KindInvalid, Message: "m", Reason: fault.ReasonContextLength})
	assert.True(t, bytes.Contains(b, []byte(`"code":"context_length_exceeded"`)), string(b))
}

// appendAnswer is the whole response to a unary call, encoded.
func appendAnswer(c *call, a *chat.Response) []byte {
	r := c.answer(&testHead, a)
	return chatjson.Append(nil, &r)
}
