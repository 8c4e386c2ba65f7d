package responses

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/httpx"
)

func ptr[T any](v T) *T { return &v }

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

// TestDecodeCodexTurn: a second turn as Codex sends it (docs/PROTOCOL.md 16): developer
// and user messages, its own answer's reasoning, message and calls sent back, their
// outputs, function, custom, namespace and hosted tools.
func TestDecodeCodexTurn(t *testing.T) {
	t.Parallel()
	c, err := decodeRequest([]byte(`{"model":"gpt-5-codex","instructions":"You are Codex.","stream":true,"store":false,
		"include":["reasoning.encrypted_content"],"reasoning":{"effort":"medium","summary":"auto"},"prompt_cache_key":"conv-1",
		"parallel_tool_calls":true,"client_metadata":{"x":"y"},"tool_choice":"auto",
		"input":[
			{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox: none"}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]},
			{"type":"reasoning","summary":[{"type":"summary_text","text":"I will list."}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listing."}]},
			{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},
			{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"},
			{"type":"function_call","call_id":"c3","namespace":"mcp","name":"search","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"a.txt"},
			{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"patched"}]},
			{"type":"function_call_output","call_id":"c3","output":"none"}
		],
		"tools":[
			{"type":"function","name":"exec_command","description":"run","strict":true,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}},
			{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},
			{"type":"namespace","name":"mcp","description":"tools of mcp","tools":[{"type":"function","name":"search","parameters":{"type":"object"}}]},
			{"type":"web_search","external_web_access":false}
		]}`), nil)
	require.NoError(t, err)
	r := c.req
	assert.True(t, c.stream)
	assert.True(t, c.summary)
	assert.Equal(t, "medium", r.ReasoningEffort)
	assert.Equal(t, "conv-1", r.CacheKey)
	assert.Equal(t, ptr(true), r.ParallelToolCalls)
	want := []chat.Message{
		{Role: chat.RoleSystem, Content: "You are Codex."},
		{Role: chat.RoleDeveloper, Parts: []chat.Part{{Type: chat.PartText, Text: "sandbox: none"}}},
		{Role: chat.RoleUser, Parts: []chat.Part{{Type: chat.PartText, Text: "list files"}}},
		{Role: chat.RoleAssistant, Parts: []chat.Part{{Type: chat.PartText, Text: "Listing."}}, ToolCalls: []chat.ToolCall{
			{ID: "c1", Type: "function", Name: "exec_command", Arguments: `{"cmd":"ls"}`},
			{ID: "c2", Type: "function", Name: "apply_patch", Arguments: `{"input":"*** Begin Patch"}`},
			{ID: "c3", Type: "function", Name: "mcp__search", Arguments: `{}`},
		}},
		{Role: chat.RoleTool, ToolCallID: "c1", Content: "a.txt"},
		{Role: chat.RoleTool, ToolCallID: "c2", Parts: []chat.Part{{Type: chat.PartText, Text: "patched"}}},
		{Role: chat.RoleTool, ToolCallID: "c3", Content: "none"},
	}
	assert.Equal(t, want, r.Messages)
	require.Len(t, r.Tools, 3)
	assert.Equal(t, chat.Tool{Type: "function", Name: "exec_command", Description: "run", Strict: true,
		Parameters: []byte(`{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}`)}, r.Tools[0])
	assert.Equal(t, chat.Tool{Type: "function", Name: "apply_patch", Description: "patch\n\nThe input must match this lark grammar:\nstart: x",
		Parameters: customParameters}, r.Tools[1], "the model is told the grammar")
	assert.Equal(t, "mcp__search", r.Tools[2].Name)
	assert.Equal(t, []string{"tools[3]"}, c.dropped)
	assert.Equal(t, []string{"tools[3]", "input[2]", "client_metadata"}, r.Ignored)
	ns, name, custom := c.names.of("mcp__search")
	assert.Equal(t, []any{"mcp", "search", false}, []any{ns, name, custom})
	ns, name, custom = c.names.of("apply_patch")
	assert.Equal(t, []any{"", "apply_patch", true}, []any{ns, name, custom})
	assert.False(t, c.echo.store)
	assert.JSONEq(t, `"auto"`, string(c.echo.toolChoice))
	assert.Contains(t, string(c.echo.tools), `"external_web_access":false`, "tools are echoed as sent")
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		check      func(t *testing.T, c *call)
	}{
		{"input as a string is one user message", `{"input":"hi","store":false}`, func(t *testing.T, c *call) {
			assert.Equal(t, []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, c.req.Messages)
			assert.Empty(t, c.req.Ignored)
		}},
		{"settings", `{"input":"hi","store":false,"max_output_tokens":100,"max_tool_calls":3,"temperature":0.5,"top_p":0.9,
			"user":"u","safety_identifier":"s","service_tier":"flex","prompt_cache_retention":"24h","parallel_tool_calls":false,
			"metadata":{"k":"v"},"truncation":"disabled"}`, func(t *testing.T, c *call) {
			r := c.req
			assert.Equal(t, ptr(int32(100)), r.MaxTokens)
			assert.Equal(t, ptr(int32(3)), r.MaxToolRounds)
			assert.Equal(t, ptr(0.5), r.Temperature)
			assert.Equal(t, ptr(0.9), r.TopP)
			assert.Equal(t, "s", r.User)
			assert.Equal(t, "flex", r.ServiceTier)
			assert.Equal(t, "24h", r.CacheRetention)
			assert.Equal(t, ptr(false), r.ParallelToolCalls)
			assert.Empty(t, r.Ignored, "metadata is echoed, truncation disabled is the default")
			assert.JSONEq(t, `{"k":"v"}`, string(c.echo.metadata))
		}},
		{"store left to its default is on, and honoured", `{"input":"hi"}`, func(t *testing.T, c *call) {
			assert.Empty(t, c.req.Ignored)
			assert.True(t, c.echo.store)
		}},
		{"text.format json_schema, flat", `{"input":"hi","store":false,"text":{"format":{"type":"json_schema","name":"w","strict":true,"schema":` + weatherSchema + `},"verbosity":"low"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, &chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "w", Strict: true, Schema: []byte(weatherSchema)}, c.req.ResponseFormat)
			assert.Equal(t, []string{"text.verbosity"}, c.req.Ignored)
		}},
		{"unknown members are listed", `{"input":"hi","store":false,"seed":1,"prompt":{"id":"p"},"conversation":null}`, func(t *testing.T, c *call) {
			assert.Equal(t, []string{"seed", "prompt"}, c.req.Ignored)
		}},
		{"at most 32 listed", `{"input":"hi"` + strings.Repeat(`,"k":1`, 100) + `,"include":[` + strings.Repeat(`"a",`, 40) + `"b"]}`, func(t *testing.T, c *call) {
			assert.Len(t, c.req.Ignored, httpx.MaxIgnored)
		}},
		{"media parts", `{"store":false,"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AA==","detail":"low"},
			{"type":"input_file","file_data":"data:application/pdf;base64,AA==","filename":"a.pdf"}]},
			{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]}`, func(t *testing.T, c *call) {
			assert.Equal(t, []chat.Part{
				{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: "data:image/png;base64,AA==", Detail: "low"}},
				{Type: chat.PartFile, File: &chat.File{Data: "data:application/pdf;base64,AA==", Filename: "a.pdf"}},
			}, c.req.Messages[0].Parts)
			assert.Equal(t, []chat.Part{{Type: chat.PartRefusal, Text: "no"}}, c.req.Messages[1].Parts)
		}},
		{"calls after a tool output start a new assistant turn", `{"store":false,"input":[{"role":"user","content":"go"},
			{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"1"},
			{"type":"function_call","call_id":"b","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"b","output":"2"}]}`, func(t *testing.T, c *call) {
			roles := []string{}
			for _, m := range c.req.Messages {
				roles = append(roles, m.Role)
			}
			assert.Equal(t, []string{"user", "assistant", "tool", "assistant", "tool"}, roles)
			assert.Equal(t, []origin{{item: 0, field: "content"}, {item: 1, field: "content", calls: []int{1}}, {item: 2, field: "output"},
				{item: 3, field: "content", calls: []int{3}}, {item: 4, field: "output"}}, c.paths.messages)
		}},
		{"tool_choice forms", `{"store":false,"input":"x","tools":[{"type":"function","name":"a"},{"type":"custom","name":"b"}],
			"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"a"},{"type":"web_search"},{"type":"custom","name":"b"}]}}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceRequired, Allowed: []string{"a", "b"}}, c.req.ToolChoice)
		}},
		{"tool_choice custom", `{"store":false,"input":"x","tools":[{"type":"custom","name":"b"}],"tool_choice":{"type":"custom","name":"b"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "b"}, c.req.ToolChoice)
		}},
		{"tool_choice of a namespace's function", `{"store":false,"input":"x","tool_choice":{"type":"function","namespace":"n","name":"b"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "n__b"}, c.req.ToolChoice)
		}},
		{"reasoning without summary; generate_summary is summary's old name", `{"store":false,"input":"x","reasoning":{"effort":"high","generate_summary":"concise"}}`, func(t *testing.T, c *call) {
			assert.Equal(t, "high", c.req.ReasoningEffort)
			assert.True(t, c.summary)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := decodeRequest([]byte(tt.body), nil)
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestDecodeRequestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body, param, code, msg string
	}{
		{`{"input":5}`, "input", fault.ReasonInvalidValue, "want a string or an array of items, got number"},
		{`{"input":[null]}`, "input[0]", fault.ReasonInvalidValue, "want an object, got null"},
		{`{"input":[{"role":"user","content":{}}]}`, "input[0].content", fault.ReasonInvalidValue, "want a string or an array of parts, got object"},
		{`{"input":[{"content":"x"}]}`, "input[0].role", fault.ReasonInvalidValue, "input[0].role is missing"},
		{`{"input":[{"role":"tool","content":"x"}]}`, "input[0].role", fault.ReasonInvalidValue, `"tool" is not one of`},
		{`{"input":[{"type":"web_search_call"}]}`, "input[0].type", fault.ReasonUnsupportedValue, `"web_search_call" is not supported`},
		{`{"input":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "input[0].content[0].type", fault.ReasonUnsupportedValue, "parts are"},
		{`{"input":[{"role":"user","content":[null]}]}`, "input[0].content[0]", fault.ReasonInvalidValue, "got null"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png"}]}]}`, "input[0].content[0].image_url", fault.ReasonUnsupportedValue, "remote image URLs"},
		{`{"input":[{"role":"user","content":[{"type":"input_image"}]}]}`, "input[0].content[0].image_url", fault.ReasonInvalidValue, "is missing"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, "input[0].content[0].file_id", fault.ReasonUnsupportedValue, "stores no files"},
		{`{"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, "input[0].content[0].file_id", fault.ReasonUnsupportedValue, "stores no files"},
		{`{"input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x"}]}]}`, "input[0].content[0].file_url", fault.ReasonUnsupportedValue, "not fetched"},
		{`{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"x"}]}]}`, "input[0].output[0].type", fault.ReasonUnsupportedValue, "parts are"},
		{`{"input":[{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}]}`, "input[0].encrypted_content", fault.ReasonInvalidValue, "not sealed by this gateway"},
		{`{"tools":[null]}`, "tools[0]", fault.ReasonInvalidValue, "got null"},
		{`{"tools":[{"type":"shell"}]}`, "tools[0].type", fault.ReasonUnsupportedValue, `"shell" is not supported`},
		{`{"tools":[{"type":"namespace","name":"n","tools":[{"type":"web_search"}]}]}`, "tools[0].tools[0].type", fault.ReasonUnsupportedValue, "in a namespace"},
		{`{"tools":[{"type":"namespace","tools":[{"type":"function","name":"a"}]}]}`, "tools[0].name", fault.ReasonInvalidValue, "is empty"},
		{`{"tool_choice":"any"}`, "tool_choice", fault.ReasonInvalidValue, `"any" is not one of`},
		{`{"tool_choice":{"type":"file_search"}}`, "tool_choice.type", fault.ReasonUnsupportedValue, "forces a hosted tool"},
		{`{"tool_choice":{"type":"function"}}`, "tool_choice.name", fault.ReasonInvalidValue, "is required"},
		{`{"tool_choice":{"type":"allowed_tools","mode":"none","tools":[]}}`, "tool_choice.mode", fault.ReasonInvalidValue, "is not one of"},
		{`{"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`, "tool_choice.tools", fault.ReasonInvalidValue, "is empty"},
		{`{"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"mcp"}]}}`, "tool_choice.tools", fault.ReasonUnsupportedValue, "only hosted tools"},
		{`{"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"shell"}]}}`, "tool_choice.tools[0].type", fault.ReasonUnsupportedValue, "is not supported"},
		{`{"tool_choice":{"type":5}}`, "tool_choice", fault.ReasonInvalidValue, "want a string or an object"},
		{`{"tool_choice":{}}`, "tool_choice.type", fault.ReasonInvalidValue, "is required"},
		{`{"background":true}`, "background", fault.ReasonUnsupportedParameter, "not supported"},
		{`{"max_output_tokens":0}`, "max_output_tokens", fault.ReasonInvalidValue, "at least 1, got 0"},
		{`{"service_tier":"gold"}`, "service_tier", fault.ReasonInvalidValue, "is not one of"},
		{`{"reasoning":{"summary":"long"}}`, "reasoning.summary", fault.ReasonInvalidValue, "is not one of"},
		{`{"text":{"format":{"type":"json_schema","schema":[]}}}`, "text.format.schema", fault.ReasonInvalidValue, "want an object, got array"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			_, err := decodeRequest([]byte(tt.body), nil)
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.param, re.Param)
			assert.Equal(t, tt.code, re.Reason)
			assert.Contains(t, re.Msg, tt.msg)
		})
	}
}

// TestDecodeNotFound: what names a stored response or item the gateway does not hold is a
// 404 naming it.
func TestDecodeNotFound(t *testing.T) {
	t.Parallel()
	for body, param := range map[string]string{
		`{"input":"x","previous_response_id":"resp_1"}`:                                   "previous_response_id",
		`{"input":[{"type":"item_reference","id":"msg_1"}]}`:                              "input[0]",
		`{"input":[{"role":"user","content":"x"},{"type":"item_reference","id":"fc_1"}]}`: "input[1]",
	} {
		_, err := decodeRequest([]byte(body), nil)
		f := fault.Classify(t.Context(), err)
		assert.Equal(t, fault.KindNotFound, f.Kind, body)
		assert.Equal(t, param, f.Param, body)
		assert.Equal(t, codeNotFound, f.Reason, body)
		assert.True(t, strings.HasPrefix(f.Message, param), f.Message)
	}
}

// TestNamed: a refusal of the translator or the core names the chat model's field; the
// surface names the Responses field the client wrote.
func TestNamed(t *testing.T) {
	t.Parallel()
	c, err := decodeRequest([]byte(`{"instructions":"s","store":false,"input":[
		{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:x"}]},
		{"type":"reasoning","summary":[]},
		{"role":"assistant","content":"b"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"custom_tool_call","call_id":"c2","name":"g","input":"x"},
		{"type":"function_call_output","call_id":"c1","output":[{"type":"input_file","file_data":"x"}]}],
		"tools":[{"type":"web_search"},{"type":"function","name":"f"},{"type":"namespace","name":"n","tools":[{"type":"custom","name":"h"}]}]}`), nil)
	require.NoError(t, err)
	for chatPath, want := range map[string]string{
		"messages":                                     "input",
		"messages[0].content":                          "instructions",
		"messages[1].role":                             "input[0].role",
		"messages[1].content[1].image_url.url":         "input[0].content[1].image_url",
		"messages[1].content[1].cache_control":         "input[0].content[1].cache_control",
		"messages[2]":                                  "input[2]",
		"messages[2].tool_calls[0].function.arguments": "input[3].arguments",
		"messages[2].tool_calls[1].function.name":      "input[4].name",
		"messages[2].tool_calls[1].id":                 "input[4].call_id",
		"messages[2].tool_calls[1].type":               "input[4].type",
		"messages[2].tool_calls[7].id":                 "input[2].tool_calls[7].id",
		"messages[3].tool_call_id":                     "input[5].call_id",
		"messages[3].content[0].file.file_data":        "input[5].output[0].file_data",
		"messages[3].content[0].file.filename":         "input[5].output[0].filename",
		"messages[9].role":                             "messages[9].role",
		"tools[0].name":                                "tools[1].name",
		"tools[1].parameters":                          "tools[2].tools[0].parameters",
		"tools[2]":                                     "tools[2]",
		"response_format.json_schema.schema":           "text.format.schema",
		"response_format.type":                         "text.format.type",
		"max_tokens":                                   "max_output_tokens",
		"max_tool_rounds":                              "max_tool_calls",
		"reasoning_effort":                             "reasoning.effort",
		"tool_choice.function.name":                    "tool_choice.name",
		"tool_choice.allowed_tools.tools[1]":           "tool_choice.tools[1]",
		"temperature":                                  "temperature",
		"max_tokensx":                                  "max_tokensx",
	} {
		assert.Equal(t, want, c.paths.rewrite(chatPath), chatPath)
	}
	refused := fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, "messages[2].tool_calls[0].function.arguments is not valid JSON")
	named := c.named(refused)
	var re *fault.RequestError
	require.ErrorAs(t, named, &re)
	assert.Equal(t, "input[3].arguments", re.Param)
	assert.Equal(t, "input[3].arguments is not valid JSON", re.Msg)
	assert.Equal(t, fault.ReasonInvalidValue, re.Reason)
	assert.ErrorIs(t, named, fault.ErrInvalidRequest)
	other := errors.New("upstream")
	assert.Same(t, other, c.named(other))
	atTools := fault.Refuse(fault.ErrUnsupported, fault.ReasonUnsupportedParameter, "model m does not support tool use").At("tools")
	assert.Same(t, error(atTools), c.named(atTools), "a path the Responses body has too stays")
}

// FuzzDecodeRequest: no body panics the decoder, and a body it refuses gets a refusal (a
// 400 naming what is wrong) or a 404 naming a stored response, never another error (a
// 500).
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","input":"hi","stream":true,"store":false}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AA=="}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]}`,
		`{"tools":[{"type":"custom","name":"p"},{"type":"namespace","name":"n","tools":[{"type":"function","name":"a","parameters":{"type":"object"}}]},{"type":"web_search"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"custom","name":"p"}]}}`,
		`{"input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"x"}],"encrypted_content":null},{"type":"item_reference","id":"x"}],"previous_response_id":""}`,
		`{"text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"}}},"reasoning":{"effort":"low","summary":"auto"},"metadata":{"k":"\xff"},"include":["a"],"seed":1,"seed":2}`,
		`{"tools":[{"type":"tool_search","execution":"client","parameters":{"type":"object"}}],"input":[{"type":"additional_tools","tools":[{"type":"namespace","name":"n","tools":[{"type":"custom","name":"c"}]}]},{"type":"tool_search_call","call_id":"s","arguments":{"query":"q"}},{"type":"tool_search_output","call_id":"s","tools":[{"type":"function","name":"f"}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	codex, err := os.ReadFile("testdata/codex_turn2.json")
	require.NoError(f, err)
	f.Add(codex)
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodeRequest(body, nil)
		if err != nil {
			var re *fault.RequestError
			var nf *notFoundError
			require.True(t, errors.As(err, &re) || errors.As(err, &nf), "%v", err)
			return
		}
		require.LessOrEqual(t, len(c.req.Ignored), httpx.MaxIgnored)
		require.Len(t, c.paths.messages, len(c.req.Messages))
		require.Len(t, c.paths.tools, len(c.req.Tools))
	})
}

// TestDecodeCodexRequest: a second turn of Codex CLI 0.169.0 (`codex exec`), as it sent it
// to the gateway, its long texts cut: everything in it is read, a namespace and a hosted
// tool among its tools.
func TestDecodeCodexRequest(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/codex_turn2.json")
	require.NoError(t, err)
	c, err := decodeRequest(body, nil)
	require.NoError(t, err)
	r := c.req
	roles := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		roles[i] = m.Role
	}
	assert.Equal(t, []string{"developer", "developer", "user", "user", "assistant", "tool"}, roles)
	require.Len(t, r.Messages[4].ToolCalls, 1)
	assert.Equal(t, "exec_command", r.Messages[4].ToolCalls[0].Name)
	assert.Equal(t, r.Messages[4].ToolCalls[0].ID, r.Messages[5].ToolCallID)
	names := make([]string, len(r.Tools))
	for i, tool := range r.Tools {
		names[i] = tool.Name
	}
	assert.Equal(t, []string{"exec_command", "write_stdin", "request_user_input", "view_image",
		"multi_agent_v1__close_agent", "multi_agent_v1__resume_agent", "multi_agent_v1__send_input", "multi_agent_v1__spawn_agent", "multi_agent_v1__wait_agent",
		"get_goal", "create_goal", "update_goal"}, names)
	assert.Equal(t, []string{"tools[8]"}, c.dropped, "web_search")
	assert.Equal(t, []string{"tools[8]", "client_metadata"}, r.Ignored)
	assert.True(t, c.stream)
	assert.True(t, c.summary)
	assert.NotEmpty(t, r.CacheKey)
}

// TestDecodeToolSearch: Codex's tool_search on gpt-5.5 (execution client) is the function
// tool_search, a hosted one is dropped; its calls and outputs in the history are a tool
// call and its result, and the tools an output loaded are tools of the request, those
// already offered once.
func TestDecodeToolSearch(t *testing.T) {
	t.Parallel()
	search := `{"type":"tool_search","execution":"client","description":"Find tools.","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}`
	c, err := decodeRequest([]byte(`{"store":false,"tools":[{"type":"function","name":"f"},`+search+`,
		{"type":"tool_search","execution":"server"},{"type":"web_search","external_web_access":false,"search_content_types":["text","image"]}],
		"input":[{"role":"user","content":"find a calendar tool"},
		{"type":"tool_search_call","id":"tsc_1","call_id":"s1","status":"completed","execution":"client","arguments":{"query":"calendar","limit":1}},
		{"type":"tool_search_output","call_id":"s1","status":"completed","execution":"client","tools":[
			{"type":"namespace","name":"cal","description":"Calendar","tools":[{"type":"function","name":"create","defer_loading":true,"parameters":{"type":"object"}}]},
			{"type":"function","name":"f"}]},
		{"type":"tool_search_call","call_id":"s2","execution":"client","arguments":"{\"query\":\"calendar\"}"},
		{"type":"tool_search_output","call_id":"s2","status":"completed","execution":"client","tools":[
			{"type":"namespace","name":"cal","tools":[{"type":"function","name":"create","parameters":{"type":"object"}}]}]}]}`), nil)
	require.NoError(t, err)
	r := c.req
	names := make([]string, len(r.Tools))
	for i, tool := range r.Tools {
		names[i] = tool.Name
	}
	assert.Equal(t, []string{"f", "tool_search", "cal__create"}, names, "loaded tools follow, each once")
	assert.Equal(t, chat.Tool{Type: "function", Name: "tool_search", Description: "Find tools.",
		Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}, r.Tools[1])
	assert.Equal(t, []string{"tools[0]", "tools[1]", "input[2].tools[0].tools[0]"}, c.paths.tools)
	assert.Equal(t, []string{"tools[2]", "tools[3]"}, c.dropped, "a hosted tool_search and web_search")
	assert.True(t, c.names.searches("tool_search"))
	assert.False(t, c.names.searches("f"))
	require.Len(t, r.Messages, 5)
	assert.Equal(t, []chat.ToolCall{{ID: "s1", Type: "function", Name: "tool_search", Arguments: `{"query":"calendar","limit":1}`}}, r.Messages[1].ToolCalls)
	assert.Equal(t, chat.RoleTool, r.Messages[2].Role)
	assert.Equal(t, "s1", r.Messages[2].ToolCallID)
	assert.JSONEq(t, `[{"type":"namespace","name":"cal","description":"Calendar","tools":[{"type":"function","name":"create","defer_loading":true,"parameters":{"type":"object"}}]},{"type":"function","name":"f"}]`,
		r.Messages[2].Content, "the result is the loaded tools as sent")
	assert.Equal(t, []chat.ToolCall{{ID: "s2", Type: "function", Name: "tool_search", Arguments: `{"query":"calendar"}`}}, r.Messages[3].ToolCalls)
	assert.Equal(t, "input[3].arguments", c.paths.rewrite("messages[3].tool_calls[0].function.arguments"))

	hosted, err := decodeRequest([]byte(`{"store":false,"input":"x","tools":[{"type":"tool_search"}]}`), nil)
	require.NoError(t, err)
	assert.Empty(t, hosted.req.Tools, "a tool_search without execution is OpenAI's hosted one")
	assert.Equal(t, []string{"tools[0]"}, hosted.dropped)
	assert.False(t, hosted.names.searches("tool_search"), "a call named tool_search is then a function_call")
}

// TestDecodeAdditionalTools: Codex's default model sends its tools in an additional_tools
// input item, not in tools: they are tools of the request, in order, flattened and named
// as the top-level ones are, after them, each once.
func TestDecodeAdditionalTools(t *testing.T) {
	t.Parallel()
	c, err := decodeRequest([]byte(`{"store":false,"tools":[{"type":"function","name":"top"}],"input":[
		{"type":"additional_tools","id":"at_1","role":"developer","tools":[
			{"type":"namespace","name":"functions","description":"fns","tools":[
				{"type":"custom","name":"exec","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},
				{"type":"function","name":"wait","parameters":{"type":"object"}}]},
			{"type":"web_search"},
			{"type":"namespace","name":"clock","tools":[{"type":"function","name":"sleep"}]}]},
		{"type":"additional_tools","tools":[{"type":"namespace","name":"clock","tools":[{"type":"function","name":"sleep"}]}]},
		{"role":"user","content":"hi"}]}`), nil)
	require.NoError(t, err)
	names := make([]string, len(c.req.Tools))
	for i, tool := range c.req.Tools {
		names[i] = tool.Name
	}
	assert.Equal(t, []string{"top", "functions__exec", "functions__wait", "clock__sleep"}, names, "an item's tool already offered is not again")
	assert.Equal(t, []string{"tools[0]", "input[0].tools[0].tools[0]", "input[0].tools[0].tools[1]", "input[0].tools[2].tools[0]"}, c.paths.tools)
	assert.Equal(t, []string{"input[0].tools[1]"}, c.dropped)
	assert.Equal(t, []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, c.req.Messages, "the item is no message")
	ns, name, custom := c.names.of("functions__exec")
	assert.Equal(t, []any{"functions", "exec", true}, []any{ns, name, custom})
	assert.Equal(t, "input[0].tools[0].tools[1].parameters", c.paths.rewrite("tools[2].function.parameters"))
}

// TestDecodeItemToolsRefused: a bad tool inside an input item is refused naming its path
// in the item.
func TestDecodeItemToolsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body, param, code, msg string
	}{
		{`{"input":[{"type":"additional_tools","tools":[{"type":"function","name":"a"},{"type":"shell"}]}]}`, "input[0].tools[1].type", fault.ReasonUnsupportedValue, `"shell" is not supported`},
		{`{"input":[{"role":"user","content":"x"},{"type":"additional_tools","tools":[{"type":"namespace","name":"n","tools":[null]}]}]}`, "input[1].tools[0].tools[0]", fault.ReasonInvalidValue, "got null"},
		{`{"input":[{"type":"additional_tools","tools":[{"type":"function","name":5}]}]}`, "input[0].tools[0].name", fault.ReasonInvalidValue, "want a string, got number"},
		{`{"input":[{"type":"additional_tools","tools":{}}]}`, "input[0].tools", fault.ReasonInvalidValue, "got object"},
		{`{"input":[{"type":"tool_search_output","call_id":"s","tools":[{"type":"namespace","tools":[{"type":"function","name":"a"}]}]}]}`, "input[0].tools[0].name", fault.ReasonInvalidValue, "is empty"},
		{`{"input":[{"type":"tool_search_call","call_id":"s","arguments":[1]}]}`, "input[0].arguments", fault.ReasonInvalidValue, "want a string or an object"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			t.Parallel()
			_, err := decodeRequest([]byte(tt.body), nil)
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.param, re.Param)
			assert.Equal(t, tt.code, re.Reason)
			assert.Contains(t, re.Msg, tt.msg)
		})
	}
}
