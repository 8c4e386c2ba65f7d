package translate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Structured output (docs/PROTOCOL.md 13.3, docs/BEDROCK.md I): what a response_format
// becomes in the Converse request, byte for byte.

const (
	sonnet45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0" // structured output
	claude4  = testModel                                      // no structured output: the synthetic tool
	novaPro  = "amazon.nova-pro-v1:0"
	llama    = "meta.llama3-1-70b-instruct-v1:0" // toolChoice auto only
	mistral  = "mistral.mistral-large-2407-v1:0" // toolChoice auto and any
	titan    = "amazon.titan-text-express-v1"    // no tool use at all
)

// weatherSchema has a keyword Bedrock's outputConfig refuses, which only the native path
// moves into the description.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number","minimum":-90}},"required":["city","temp_c"]}`

func ptr[T any](v T) *T { return &v }

func jsonSchemaFormat(schema string) *chat.ResponseFormat {
	return &chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "weather", Schema: []byte(schema), Strict: true}
}

func userTurn(text string) []chat.Message {
	return []chat.Message{{Role: chat.RoleUser, Content: text}}
}

// The synthetic tool as the emulation sends it: the client's schema as written (compacted),
// nothing moved.
const answerTool = `{"toolSpec":{"name":"json_response","description":"Give your final answer to the user through this tool: its input is the answer.",` +
	`"inputSchema":{"json":` + weatherSchema + `}}}`

const clientTool = `{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object","properties":{}}}}}`

const (
	answerNote     = `{"text":"When you give your final answer, give it by calling the tool json_response with the answer as its input, not as text."}`
	answerOnlyNote = `{"text":"Give your answer by calling the tool json_response with the answer as its input, not as text; it is the one tool you may call."}`
	budgetNote     = `{"text":"The tool budget for this task is used up. Do not call tools; answer now from the information above."}`
	user           = `{"role":"user","content":[{"text":"Weather in Paris?"}]}`
)

func TestResponseFormatConverse(t *testing.T) {
	t.Parallel()
	format := jsonSchemaFormat(weatherSchema)
	weather := []chat.Tool{{Name: "get_weather"}}
	// A task whose one tool round is spent.
	spent := append(userTurn("Weather in Paris?"),
		chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "get_weather", Arguments: "{}"}}},
		chat.Message{Role: chat.RoleTool, ToolCallID: "c1", Content: "21C"})
	spentMsgs := user + `,{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"get_weather","input":{}}}]},` +
		`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"21C"}]}}]}`
	tests := []struct {
		name  string
		model string
		req   chat.Request
		want  string
	}{
		{"native: outputConfig, the schema sanitised, sorted and a string", sonnet45,
			chat.Request{ResponseFormat: &chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "weather", Description: "The weather now",
				Schema: []byte(weatherSchema)}},
			`{"messages":[` + user + `],"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{` +
				`"schema":"{\"properties\":{\"city\":{\"type\":\"string\"},\"temp_c\":{\"description\":\"minimum: -90\",\"type\":\"number\"}},\"required\":[\"city\",\"temp_c\"],\"type\":\"object\"}",` +
				`"name":"weather","description":"The weather now"}}}}}`},
		{"native: no name gets one", sonnet45,
			chat.Request{ResponseFormat: &chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":"object"}`)}},
			`{"messages":[` + user + `],"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{\"type\":\"object\"}","name":"response"}}}}}`},
		{"emulated without client tools: forced", claude4, chat.Request{ResponseFormat: format},
			`{"messages":[` + user + `],"toolConfig":{"tools":[` + answerTool + `],"toolChoice":{"tool":{"name":"json_response"}}}}`},
		{"emulated on Nova: forced", novaPro, chat.Request{ResponseFormat: format},
			`{"messages":[` + user + `],"toolConfig":{"tools":[` + answerTool + `],"toolChoice":{"tool":{"name":"json_response"}}}}`},
		{"emulated where toolChoice.tool is missing but any is there: any, the one tool", mistral, chat.Request{ResponseFormat: format},
			`{"messages":[` + user + `],"toolConfig":{"tools":[` + answerTool + `],"toolChoice":{"any":{}}}}`},
		{"emulated where only auto is there: the note", llama, chat.Request{ResponseFormat: format},
			`{"messages":[` + user + `],"system":[` + answerOnlyNote + `],"toolConfig":{"tools":[` + answerTool + `]}}`},
		{"emulated with client tools: offered beside them, the note", claude4, chat.Request{ResponseFormat: format, Tools: weather},
			`{"messages":[` + user + `],"system":[` + answerNote + `],"toolConfig":{"tools":[` + clientTool + `,` + answerTool + `]}}`},
		{"emulated with client tools and their tool_choice: kept", claude4,
			chat.Request{ResponseFormat: format, Tools: weather, ToolChoice: chat.ToolChoice{Mode: chat.ChoiceRequired}},
			`{"messages":[` + user + `],"system":[` + answerNote + `],"toolConfig":{"tools":[` + clientTool + `,` + answerTool + `],"toolChoice":{"any":{}}}}`},
		{"emulated with thinking: never forced (BEDROCK.md G10)", claude4, chat.Request{ResponseFormat: format, ReasoningEffort: "low"},
			`{"messages":[` + user + `],"system":[` + answerOnlyNote + `],"inferenceConfig":{"maxTokens":5120},` +
				`"toolConfig":{"tools":[` + answerTool + `]},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}}`},
		{"tool_choice none: the client's tools are not offered, the answer tool is forced", claude4,
			chat.Request{ResponseFormat: format, Tools: weather, ToolChoice: chat.ToolChoice{Mode: chat.ChoiceNone}},
			`{"messages":[` + user + `],"toolConfig":{"tools":[` + answerTool + `],"toolChoice":{"tool":{"name":"json_response"}}}}`},
		{"tool budget spent: tools kept for the history, the answer tool forced", claude4,
			chat.Request{ResponseFormat: format, Tools: weather, MaxToolRounds: ptr(int32(1)), Messages: spent},
			`{"messages":[` + spentMsgs + `],"system":[` + budgetNote + `],"toolConfig":{"tools":[` + clientTool + `,` + answerTool + `],"toolChoice":{"tool":{"name":"json_response"}}}}`},
		{"parallel calls off: Claude's field typed like the client's choice", claude4,
			chat.Request{ResponseFormat: format, Tools: weather, ParallelToolCalls: ptr(false)},
			`{"messages":[` + user + `],"system":[` + answerNote + `],"toolConfig":{"tools":[` + clientTool + `,` + answerTool + `]},` +
				`"additionalModelRequestFields":{"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}}`},
		{"a client tool of that name: json_response_2", claude4,
			chat.Request{ResponseFormat: jsonSchemaFormat(`{"type":"object"}`), Tools: []chat.Tool{{Name: "json_response"}}},
			`{"messages":[` + user + `],"system":[{"text":"When you give your final answer, give it by calling the tool json_response_2 with the answer as its input, not as text."}],` +
				`"toolConfig":{"tools":[{"toolSpec":{"name":"json_response","inputSchema":{"json":{"type":"object","properties":{}}}}},` +
				`{"toolSpec":{"name":"json_response_2","description":"Give your final answer to the user through this tool: its input is the answer.","inputSchema":{"json":{"type":"object"}}}}]}}`},
		{"a client tool whose Bedrock name is json_response: json_response_2", claude4,
			chat.Request{ResponseFormat: jsonSchemaFormat(`{"type":"object"}`), Tools: []chat.Tool{{Name: "json.response"}, {Name: "json_response_3"}}, ToolChoice: chat.ToolChoice{Mode: chat.ChoiceNone}},
			`{"messages":[` + user + `],"toolConfig":{"tools":[{"toolSpec":{"name":"json_response_2","description":"Give your final answer to the user through this tool: its input is the answer.",` +
				`"inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"json_response_2"}}}}`},
		{"the client's description follows the tool's", claude4,
			chat.Request{ResponseFormat: &chat.ResponseFormat{Type: chat.FormatJSONSchema, Description: "The weather now.", Schema: []byte(`{"type":"object"}`)}},
			`{"messages":[` + user + `],"toolConfig":{"tools":[{"toolSpec":{"name":"json_response","description":"Give your final answer to the user through this tool: its input is the answer. The weather now.",` +
				`"inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"json_response"}}}}`},
		{"json_object: an instruction", sonnet45, chat.Request{ResponseFormat: &chat.ResponseFormat{Type: chat.FormatJSONObject},
			Messages: []chat.Message{{Role: chat.RoleSystem, Content: "Be brief."}, {Role: chat.RoleUser, Content: "Weather in Paris?"}}},
			`{"messages":[` + user + `],"system":[{"text":"Be brief."},{"text":"Answer with one JSON object and nothing else: no text before or after it, no code fence."}]}`},
		{"text: nothing", claude4, chat.Request{ResponseFormat: &chat.ResponseFormat{Type: chat.FormatText}},
			`{"messages":[` + user + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.req.Messages == nil {
				tt.req.Messages = userTurn("Weather in Paris?")
			}
			out, names, err := translate.RequestWith(&tt.req, capabilities.Lookup(tt.model), translate.Options{NoAutoCache: true})
			require.NoError(t, err)
			body, err := bedrock.MarshalRequest(out)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(body))
			assert.Equal(t, tt.want, string(body), "byte for byte")
			require.NoError(t, validateBody(tt.model, body))
			assert.Equal(t, out.OutputConfig != nil, names.OutputSchema)
			assert.Equal(t, tt.req.ResponseFormat.Type == chat.FormatJSONObject, names.JSONObject)
			if out.ToolConfig != nil && out.OutputConfig == nil && tt.req.ResponseFormat.Type == chat.FormatJSONSchema {
				last := out.ToolConfig.Tools[len(out.ToolConfig.Tools)-1].ToolSpec.Name
				assert.Equal(t, last, names.AnswerTool)
				assert.True(t, names.IsAnswerTool(last))
				for _, tl := range tt.req.Tools {
					assert.False(t, names.IsAnswerTool(tl.Name), "a client tool is never the answer tool")
				}
			} else {
				assert.Empty(t, names.AnswerTool)
			}
		})
	}
}

// TestSanitizeSchema: outputConfig's schema loses what Bedrock refuses (BEDROCK.md I rule
// 2) to the description of the schema that had it, only where a member is a schema
// keyword; every object's members are sorted and the client's numbers and escapes kept.
func TestSanitizeSchema(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, schema, want string }{
		{"numbers: each keyword in the description, in BEDROCK.md I's order",
			`{"type":"object","properties":{"n":{"type":"integer","exclusiveMaximum":10,"minimum":1,"maximum":9.5,"exclusiveMinimum":0}}}`,
			`{"properties":{"n":{"description":"minimum: 1, maximum: 9.5, exclusiveMinimum: 0, exclusiveMaximum: 10","type":"integer"}},"type":"object"}`},
		{"after the client's description, in parentheses",
			`{"type":"object","properties":{"n":{"description":"How many \"pods\"","type":"integer","minimum":1}}}`,
			`{"properties":{"n":{"description":"How many \"pods\" (minimum: 1)","type":"integer"}},"type":"object"}`},
		{"a blank description is replaced",
			`{"type":"object","properties":{"n":{"description":" ","type":"integer","minimum":1}}}`,
			`{"properties":{"n":{"description":"minimum: 1","type":"integer"}},"type":"object"}`},
		{"minItems 0 and 1 stay; above 1 and maxItems go",
			`{"type":"object","properties":{"a":{"type":"array","minItems":1},"b":{"type":"array","minItems":0.0},"c":{"type":"array","minItems":2,"maxItems":5}}}`,
			`{"properties":{"a":{"minItems":1,"type":"array"},"b":{"minItems":0.0,"type":"array"},"c":{"description":"maxItems: 5, minItems: 2","type":"array"}},"type":"object"}`},
		{"a property named like a keyword is a property",
			`{"type":"object","properties":{"minimum":{"type":"number"},"maxItems":{"type":"integer","maximum":3}},"required":["minimum"]}`,
			`{"properties":{"maxItems":{"description":"maximum: 3","type":"integer"},"minimum":{"type":"number"}},"required":["minimum"],"type":"object"}`},
		{"nested schemas everywhere a schema may stand",
			`{"type":"object","$defs":{"d":{"type":"number","minimum":0}},"properties":{"l":{"type":"array","items":{"type":"number","maximum":1},"prefixItems":[{"type":"integer","minimum":2}]},` +
				`"u":{"anyOf":[{"type":"number","maximum":4},{"type":"null"}]},"m":{"type":"object","additionalProperties":{"type":"integer","minimum":5}}}}`,
			`{"$defs":{"d":{"description":"minimum: 0","type":"number"}},"properties":{"l":{"items":{"description":"maximum: 1","type":"number"},"prefixItems":[{"description":"minimum: 2","type":"integer"}],"type":"array"},` +
				`"m":{"additionalProperties":{"description":"minimum: 5","type":"integer"},"type":"object"},"u":{"anyOf":[{"description":"maximum: 4","type":"number"},{"type":"null"}]}},"type":"object"}`},
		{"values that are not schemas keep their members, sorted",
			`{"type":"object","properties":{"x":{"type":"object","default":{"minimum":1,"b":2,"a":1},"enum":[{"maximum":2}]}}}`,
			`{"properties":{"x":{"default":{"a":1,"b":2,"minimum":1},"enum":[{"maximum":2}],"type":"object"}},"type":"object"}`},
		{"numbers and escapes as written, UTF-8 as it is, no HTML escaping",
			`{"type":"object","properties":{"big":{"type":"integer","maximum":12345678901234567890,"description":"<&> 日本語 \u00e9"}}}`,
			`{"properties":{"big":{"description":"<&> 日本語 é (maximum: 12345678901234567890)","type":"integer"}},"type":"object"}`},
		{"nothing refused: only sorted",
			`{"type":"object","required":["b","a"],"properties":{"b":{"type":"string"},"a":{"type":"string","enum":["z","y"]}}}`,
			`{"properties":{"a":{"enum":["z","y"],"type":"string"},"b":{"type":"string"}},"required":["b","a"],"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &chat.Request{Messages: userTurn("go"), ResponseFormat: jsonSchemaFormat(tt.schema)}
			out, _, err := translate.Request(req, capabilities.Lookup(sonnet45))
			require.NoError(t, err)
			require.NotNil(t, out.OutputConfig)
			assert.Equal(t, tt.want, out.OutputConfig.TextFormat.Structure.JSONSchema.Schema)
			body, err := bedrock.MarshalRequest(out)
			require.NoError(t, err)
			require.NoError(t, validateBody(sonnet45, body), "the simulator refuses BEDROCK.md I's keywords")
		})
	}

	// The same schema with its members in another order and other whitespace: the same bytes.
	var got []string
	for _, schema := range []string{
		`{"type":"object","properties":{"b":{"type":"integer","minimum":1},"a":{"type":"string"}}}`,
		"{ \"properties\": {\"a\": {\"type\": \"string\"}, \"b\": {\"minimum\": 1, \"type\": \"integer\"}},\n \"type\": \"object\" }",
	} {
		out, _, err := translate.Request(&chat.Request{Messages: userTurn("go"), ResponseFormat: jsonSchemaFormat(schema)}, capabilities.Lookup(sonnet45))
		require.NoError(t, err)
		got = append(got, out.OutputConfig.TextFormat.Structure.JSONSchema.Schema)
	}
	assert.Equal(t, got[0], got[1])
}

// TestResponseFormatErrors: each refusal names its field, on every model, before Bedrock.
func TestResponseFormatErrors(t *testing.T) {
	t.Parallel()
	const schemaParam = "response_format.json_schema.schema"
	tests := []struct {
		name   string
		model  string
		format chat.ResponseFormat
		param  string
		msg    string
		err    error
	}{
		{"unknown type", claude4, chat.ResponseFormat{Type: "xml"}, "response_format.type",
			`invalid request: response_format.type "xml" is not one of "text", "json_object", "json_schema"`, fault.ErrInvalidRequest},
		{"no type", claude4, chat.ResponseFormat{}, "response_format.type",
			`invalid request: response_format.type is missing; it is "text", "json_object" or "json_schema"`, fault.ErrInvalidRequest},
		{"no schema", sonnet45, chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "x"}, schemaParam,
			`invalid request: response_format.json_schema.schema is missing; it is a JSON Schema whose root "type" is "object"`, fault.ErrInvalidRequest},
		{"an array root", claude4, chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":"array","items":{}}`)}, schemaParam,
			`invalid request: response_format.json_schema.schema must be a JSON Schema whose root "type" is "object", not "array"`, fault.ErrInvalidRequest},
		{"no root type", sonnet45, chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"properties":{}}`)}, schemaParam,
			`invalid request: response_format.json_schema.schema must be a JSON Schema whose root "type" is "object"; it has no "type"`, fault.ErrInvalidRequest},
		{"a list of types", sonnet45, chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":["object","null"]}`)}, schemaParam,
			`invalid request: response_format.json_schema.schema must be a JSON Schema whose root "type" is "object"`, fault.ErrInvalidRequest},
		{"not an object (gRPC's schema_json)", sonnet45, chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`true`)}, schemaParam,
			`invalid request: response_format.json_schema.schema must be a JSON object, not a boolean`, fault.ErrInvalidRequest},
		{"not JSON (gRPC's schema_json)", sonnet45, chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":`)}, schemaParam,
			`invalid request: response_format.json_schema.schema is not valid JSON: unexpected end of input at byte 8`, fault.ErrInvalidRequest},
		{"invalid UTF-8 (gRPC's schema_json)", sonnet45, chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte("{\"type\":\"object\",\"description\":\"\xff\"}")}, schemaParam,
			`invalid request: response_format.json_schema.schema is not valid UTF-8`, fault.ErrInvalidRequest},
		{"a name Bedrock and OpenAI refuse", claude4, chat.ResponseFormat{Type: chat.FormatJSONSchema, Name: "my schema", Schema: []byte(`{"type":"object"}`)},
			"response_format.json_schema.name",
			`invalid request: response_format.json_schema.name "my schema" must be 1 to 64 letters, digits, underscores and hyphens`, fault.ErrInvalidRequest},
		{"a model with neither structured output nor tools", titan, chat.ResponseFormat{Type: chat.FormatJSONSchema, Schema: []byte(`{"type":"object"}`)},
			"response_format.type",
			`unsupported: response_format.type "json_schema" is not supported on model amazon.titan-text-express-v1, which has neither structured output nor tool use; use "json_object" or another model`,
			fault.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := translate.Request(&chat.Request{Messages: userTurn("go"), ResponseFormat: &tt.format}, capabilities.Lookup(tt.model))
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.param, re.Param)
			assert.Equal(t, tt.msg, err.Error())
			assert.True(t, errors.Is(err, tt.err))
		})
	}
	// json_object needs neither: an instruction works on every model.
	_, _, err := translate.Request(&chat.Request{Messages: userTurn("go"), ResponseFormat: &chat.ResponseFormat{Type: chat.FormatJSONObject}}, capabilities.Lookup(titan))
	require.NoError(t, err)
}

// answerOf is a Converse answer of these blocks.
func answerOf(stop string, blocks ...bedrock.ContentBlock) *bedrock.ConverseResponse {
	return &bedrock.ConverseResponse{StopReason: stop, Output: &bedrock.ConverseOutput{Message: &bedrock.Message{Role: "assistant", Content: blocks}}}
}

func toolUse(id, name, input string) bedrock.ContentBlock {
	return bedrock.ContentBlock{ToolUse: &bedrock.ToolUseBlock{ToolUseID: id, Name: name, Input: []byte(input)}}
}

// TestAnswerToolResponse: the answer tool's input is the text, finish "stop"; it is never a
// tool call, and the model's text around it is not the answer (translate.TextHold).
func TestAnswerToolResponse(t *testing.T) {
	t.Parallel()
	tools := []chat.Tool{{Name: "get.weather"}}
	translated := func(t *testing.T, req chat.Request) *translate.Plan {
		t.Helper()
		req.Messages, req.ResponseFormat = userTurn("go"), jsonSchemaFormat(`{"type":"object"}`)
		_, names, err := translate.Request(&req, capabilities.Lookup(claude4))
		require.NoError(t, err)
		return names
	}
	plain := translated(t, chat.Request{Tools: tools})
	oneCall := translated(t, chat.Request{Tools: tools, ParallelToolCalls: ptr(false)})
	spent := translated(t, chat.Request{Tools: tools, MaxToolRounds: ptr(int32(0))})
	answer := toolUse("t9", "json_response", `{"city": "Paris"}`)
	tests := []struct {
		name    string
		names   *translate.Plan
		answer  *bedrock.ConverseResponse
		text    string
		calls   []string // client names of the calls kept
		finish  chat.FinishReason
		dropped int
	}{
		{"the preamble goes, the input is the text", plain,
			answerOf("tool_use", bedrock.TextBlock("I'll call json_response."), answer),
			`{"city":"Paris"}`, nil, chat.FinishStop, 0},
		{"no input: {}", plain, answerOf("tool_use", toolUse("t9", "json_response", ``)), `{}`, nil, chat.FinishStop, 0},
		{"text after it goes too", plain, answerOf("end_turn", answer, bedrock.TextBlock("Done.")), `{"city":"Paris"}`, nil, chat.FinishStop, 0},
		{"not called: the text is the text", plain, answerOf("end_turn", bedrock.TextBlock("Hello.")), `Hello.`, nil, chat.FinishStop, 0},
		{"with a client call: the call is returned, the text is the input alone", plain,
			answerOf("tool_use", bedrock.TextBlock("Looking it up. "), toolUse("t1", "get_weather", `{}`), bedrock.TextBlock("And "), answer),
			`{"city":"Paris"}`, []string{"get.weather"}, chat.FinishToolCalls, 0},
		{"a client call without the answer keeps the text", plain,
			answerOf("tool_use", bedrock.TextBlock("Looking it up."), toolUse("t1", "get_weather", `{}`)),
			`Looking it up.`, []string{"get.weather"}, chat.FinishToolCalls, 0},
		{"only the first answer counts", plain,
			answerOf("tool_use", answer, toolUse("t8", "json_response", `{"city":"Rome"}`)), `{"city":"Paris"}`, nil, chat.FinishStop, 0},
		{"parallel calls off: the answer is no client call", oneCall,
			answerOf("tool_use", answer, toolUse("t1", "get_weather", `{}`), toolUse("t2", "get_weather", `{"x":1}`)),
			`{"city":"Paris"}`, []string{"get.weather"}, chat.FinishToolCalls, 1},
		{"budget spent: client calls dropped, the answer kept", spent,
			answerOf("tool_use", toolUse("t1", "get_weather", `{}`), answer), `{"city":"Paris"}`, nil, chat.FinishStop, 1},
		{"cut by max_tokens: length", plain, answerOf("max_tokens", answer), `{"city":"Paris"}`, nil, chat.FinishLength, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := translate.Response(tt.answer, tt.names)
			require.NoError(t, err)
			assert.Equal(t, tt.text, resp.Text)
			wantID := "t9" // the first answer's call, which repair names (docs/PROTOCOL.md 13.2)
			if !strings.HasPrefix(tt.text, "{") {
				wantID = ""
			}
			assert.Equal(t, wantID, resp.AnswerID)
			var calls []string
			for _, c := range resp.ToolCalls {
				calls = append(calls, c.Name)
			}
			assert.Equal(t, tt.calls, calls)
			assert.Equal(t, tt.finish, resp.Finish)
			assert.Equal(t, tt.dropped, resp.DroppedToolCalls)
		})
	}

	// Without the answer tool, a call of that name is the client's own.
	resp, err := translate.Response(answerOf("tool_use", bedrock.TextBlock("Calling."), answer), nil)
	require.NoError(t, err)
	assert.Equal(t, "Calling.", resp.Text)
	assert.Empty(t, resp.AnswerID)
	require.Len(t, resp.ToolCalls, 1)
	assert.Equal(t, "json_response", resp.ToolCalls[0].Name)
}

func TestOneJSONObject(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		`{"a":1}`:                 true,
		"\n {\"a\":[1,{}]} \n":    true,
		`{}`:                      true,
		`[{"a":1}]`:               false,
		`{"a":1}{"b":2}`:          false,
		"```json\n{\"a\":1}\n```": false,
		`Here: {"a":1}`:           false,
		`{"a":1`:                  false,
		``:                        false,
		`"{}"`:                    false,
		`{"a":1,"a":2}`:           false,
	} {
		assert.Equal(t, want, translate.OneJSONObject(text), text)
	}
}

// TestRefusedParam: Bedrock's refusal of the outputConfig schema names the schema; other
// refusals, or a request without outputConfig, name nothing.
func TestRefusedParam(t *testing.T) {
	t.Parallel()
	_, native, err := translate.Request(&chat.Request{Messages: userTurn("go"), ResponseFormat: jsonSchemaFormat(`{"type":"object"}`)}, capabilities.Lookup(sonnet45))
	require.NoError(t, err)
	_, emulated, err := translate.Request(&chat.Request{Messages: userTurn("go"), ResponseFormat: jsonSchemaFormat(`{"type":"object"}`)}, capabilities.Lookup(claude4))
	require.NoError(t, err)
	const refused = "output_config.format.schema: For 'number' type, properties maximum, minimum are not supported"
	assert.Equal(t, "response_format.json_schema.schema", translate.RefusedParam(native, refused))
	assert.Equal(t, "response_format.json_schema.schema", translate.RefusedParam(native,
		"This model doesn't support the outputConfig.textFormat field. Remove outputConfig.textFormat and try again"))
	assert.Empty(t, translate.RefusedParam(native, "A conversation must start with a user message."))
	assert.Empty(t, translate.RefusedParam(emulated, refused))
	assert.Empty(t, translate.RefusedParam(nil, refused))
}

// FuzzSanitizeSchema: for any schema the gateway accepts, the outputConfig it sends passes
// the simulator's checks of BEDROCK.md I (no refused keyword left anywhere), and
// sanitising is idempotent: the schema it sends, sent again, gives the same bytes.
func FuzzSanitizeSchema(f *testing.F) {
	for _, seed := range []string{
		weatherSchema,
		`{"type":"object","properties":{"l":{"type":"array","minItems":3,"maxItems":5,"items":{"type":"integer","minimum":0,"exclusiveMaximum":9}}}}`,
		`{"type":"object","$defs":{"n":{"type":"number","maximum":1e3}},"properties":{"a":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]},"minimum":{"type":"string","description":"x"}}}`,
		`{"type":"object","properties":{"p":{"type":"object","additionalProperties":{"type":"integer","minimum":-1}}},"prefixItems":[{"maximum":2}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		model := capabilities.Lookup(sonnet45)
		out, _, err := translate.Request(&chat.Request{Messages: userTurn("go"), ResponseFormat: jsonSchemaFormat(string(schema))}, model)
		if err != nil {
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			return
		}
		body, err := bedrock.MarshalRequest(out)
		require.NoError(t, err)
		require.NoError(t, validateBody(sonnet45, body))
		sent := out.OutputConfig.TextFormat.Structure.JSONSchema.Schema
		again, _, err := translate.Request(&chat.Request{Messages: userTurn("go"), ResponseFormat: jsonSchemaFormat(sent)}, model)
		require.NoError(t, err)
		require.Equal(t, sent, again.OutputConfig.TextFormat.Structure.JSONSchema.Schema)
	})
}
