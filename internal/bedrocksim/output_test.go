package bedrocksim

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	haiku45    = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
	opus45     = "global.anthropic.claude-opus-4-5-20251101-v1:0"
	deepseek32 = "us.deepseek.v3-2-v1:0"
	// personSchema is a structured-output schema with a nested object, an array and a $ref.
	personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"address":{"$ref":"#/$defs/address"}},"required":["name","age"],"additionalProperties":false,"$defs":{"address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"],"additionalProperties":false}}}`
	personJSON   = `{"name":"example","age":42,"tags":["example"],"address":{"city":"example","zip":"example"}}`
)

// outputConfig is the outputConfig member asking for structured output with schema, a JSON
// text sent as a string.
func outputConfig(schema string) string {
	return `"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"name":"person","description":"A person","schema":` + strconv.Quote(schema) + `}}}}`
}

// anthropicOutput is Claude's own form, output_config.format, in additionalModelRequestFields.
func anthropicOutput(format string) string {
	return fields(`"output_config":{"format":` + format + `}`)
}

// strictTool is a toolSpec with strict true and the given schema.
func strictTool(name, schema string) string {
	return `{"toolSpec":{"name":"` + name + `","inputSchema":{"json":` + schema + `},"strict":true}}`
}

func TestValidateStructuredOutput(t *testing.T) {
	t.Parallel()
	const i7 = "This model doesn't support the outputConfig.textFormat field. Remove outputConfig.textFormat and try again"
	const ptr = "Malformed input request: #/outputConfig/textFormat"
	numbers := func(keywords string) string {
		return `{"type":"object","properties":{"n":{"type":"number",` + keywords + `}}}`
	}
	shaped := func(textFormat string) string { return reqWith(`"outputConfig":{"textFormat":`+textFormat+`}`, hi) }
	for _, tc := range []struct {
		name, model, body, want string
	}{
		// Taken: the models of I6, in every id form.
		{"Sonnet 4.5", sonnet45, reqWith(outputConfig(personSchema), hi), ""},
		{"Haiku 4.5", haiku45, reqWith(outputConfig(personSchema), hi), ""},
		{"Opus 4.5", opus45, reqWith(outputConfig(personSchema), hi), ""},
		{"Opus 4.6", opus46, reqWith(outputConfig(personSchema), hi), ""},
		{"DeepSeek v3.2", deepseek32, reqWith(outputConfig(personSchema), hi), ""},
		{"application profile", appARN, reqWith(outputConfig(personSchema), hi), ""},
		{"no description, no name", sonnet45, reqWith(`"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{\"type\":\"object\"}"}}}}`, hi), ""},
		{"minItems 1", sonnet45, reqWith(outputConfig(`{"type":"object","properties":{"l":{"type":"array","minItems":1}}}`), hi), ""},
		{"effort only, unread", sonnet4, reqWith(`"outputConfig":{"effort":"high"}`, hi), ""},
		{"null outputConfig", sonnet4, reqWith(`"outputConfig":null`, hi), ""},
		{"with tools", sonnet45, reqWith(join(weatherTC, outputConfig(personSchema)), hi), ""},

		// I7: models without structured output.
		{"I7 Sonnet 4", sonnet4, reqWith(outputConfig(personSchema), hi), i7},
		{"I7 Sonnet 4.6 (unverified)", sonnet46, reqWith(outputConfig(personSchema), hi), i7},
		{"I7 Opus 4.7 (unverified)", opus47, reqWith(outputConfig(personSchema), hi), i7},
		{"I7 Nova Pro", nova, reqWith(outputConfig(personSchema), hi), i7},
		{"I7 DeepSeek v3.1", deepseek, reqWith(outputConfig(personSchema), hi), i7},
		{"I7 before the schema", llama, reqWith(outputConfig(`[1]`), hi), i7},

		// I1: the shape.
		{"I1 schema as an object", sonnet45, shaped(`{"type":"json_schema","structure":{"jsonSchema":{"schema":{"type":"object"}}}}`),
			ptr + "/structure/jsonSchema/schema: expected type: String, found: JSONObject, reformat your input and try again."},
		{"I1 type text", sonnet45, shaped(`{"type":"text","structure":{"jsonSchema":{"schema":"{}"}}}`), ptr + "/type: text is not a valid enum value, reformat your input and try again."},
		{"I1 no type", sonnet45, shaped(`{"structure":{"jsonSchema":{"schema":"{}"}}}`), ptr + ": required key [type] not found, reformat your input and try again."},
		{"I1 no structure", sonnet45, shaped(`{"type":"json_schema"}`), ptr + ": required key [structure] not found, reformat your input and try again."},
		{"I1 empty structure", sonnet45, shaped(`{"type":"json_schema","structure":{}}`), ptr + "/structure: expected minProperties: 1, actual: 0, reformat your input and try again."},
		{"I1 no schema", sonnet45, shaped(`{"type":"json_schema","structure":{"jsonSchema":{"name":"x"}}}`), ptr + "/structure/jsonSchema: required key [schema] not found, reformat your input and try again."},
		{"I1 extra key", sonnet45, shaped(`{"type":"json_schema","structure":{"jsonSchema":{"schema":"{}","strict":true}}}`),
			ptr + "/structure/jsonSchema: extraneous key [strict] is not permitted, reformat your input and try again."},
		{"I1 OpenAI's shape", sonnet45, shaped(`{"type":"json_schema","json_schema":{"name":"x","schema":{}}}`),
			ptr + ": extraneous key [json_schema] is not permitted, reformat your input and try again."},
		{"I1 key in outputConfig", sonnet45, reqWith(`"outputConfig":{"format":{}}`, hi), "Malformed input request: #/outputConfig: extraneous key [format] is not permitted, reformat your input and try again."},
		{"I1 schema not JSON", sonnet45, reqWith(outputConfig(`{"type":`), hi),
			"The value at outputConfig.textFormat.structure.jsonSchema.schema is not valid JSON. Provide the JSON schema as a string and try again."},
		{"I1 schema not an object", sonnet45, reqWith(outputConfig(`["object"]`), hi),
			"The value at outputConfig.textFormat.structure.jsonSchema.schema.type must be one of the following: object."},
		{"I1 root not an object schema", sonnet45, reqWith(outputConfig(`{"type":"array","items":{"type":"string"}}`), hi),
			"The value at outputConfig.textFormat.structure.jsonSchema.schema.type must be one of the following: object."},

		// I2: keywords of JSON Schema that structured output does not take.
		{"I2 number minimum and maximum", sonnet45, reqWith(outputConfig(numbers(`"minimum":1,"maximum":5`)), hi),
			"output_config.format.schema: For 'number' type, properties maximum, minimum are not supported"},
		{"I2 integer minimum", sonnet45, reqWith(outputConfig(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}`), hi),
			"output_config.format.schema: For 'integer' type, property minimum is not supported"},
		{"I2 exclusive bounds", sonnet45, reqWith(outputConfig(numbers(`"exclusiveMinimum":0,"exclusiveMaximum":9`)), hi),
			"output_config.format.schema: For 'number' type, properties exclusiveMaximum, exclusiveMinimum are not supported"},
		{"I2 maxItems", sonnet45, reqWith(outputConfig(`{"type":"object","properties":{"l":{"type":"array","maxItems":3}}}`), hi),
			"output_config.format.schema: For 'array' type, property maxItems is not supported"},
		{"I2 minItems 2", sonnet45, reqWith(outputConfig(`{"type":"object","properties":{"l":{"type":"array","minItems":2}}}`), hi),
			"output_config.format.schema: For 'array' type, property minItems only supports the values 0 and 1"},
		{"I2 deep in $defs", opus46, reqWith(outputConfig(`{"type":"object","$defs":{"a":{"type":"object","properties":{"b":{"anyOf":[{"type":"string"},{"type":"number","maximum":2}]}}}}}`), hi),
			"output_config.format.schema: For 'number' type, property maximum is not supported"},
		{"I2 a property named minimum", sonnet45, reqWith(outputConfig(`{"type":"object","properties":{"minimum":{"type":"string"}}}`), hi), ""},

		// I4: Claude's own form.
		{"I4 Opus 4.7", opus47, reqWith(anthropicOutput(`{"type":"json_schema","schema":{"type":"object"}}`), hi), "output_config.format: Extra inputs are not permitted"},
		{"I4 Sonnet 4", sonnet4, reqWith(anthropicOutput(`{"type":"json_schema","schema":{"type":"object"}}`), hi), "output_config.format: Extra inputs are not permitted"},
		{"I4 taken on Sonnet 4.5", sonnet45, reqWith(anthropicOutput(`{"type":"json_schema","schema":`+personSchema+`}`), hi), ""},
		{"I4 beside the effort", opus46, reqWith(fields(adaptive, `"output_config":{"effort":"low","format":{"type":"json_schema","schema":{"type":"object"}}}`), hi), ""},
		{"I4 both forms", sonnet45, reqWith(join(outputConfig(personSchema), anthropicOutput(`{"type":"json_schema","schema":{"type":"object"}}`)), hi),
			"outputConfig.textFormat and additionalModelRequestFields.output_config.format cannot both be set. Remove one of them and try again."},
		{"I4 no type", sonnet45, reqWith(anthropicOutput(`{"schema":{"type":"object"}}`), hi), "output_config.format.type: Field required"},
		{"I4 other type", sonnet45, reqWith(anthropicOutput(`{"type":"json_object"}`), hi),
			"output_config.format: Input tag 'json_object' found using 'type' does not match any of the expected tags: 'json_schema'"},
		{"I4 no schema", sonnet45, reqWith(anthropicOutput(`{"type":"json_schema"}`), hi), "output_config.format.json_schema.schema: Field required"},
		{"I4 schema as a string", sonnet45, reqWith(anthropicOutput(`{"type":"json_schema","schema":"{}"}`), hi), "output_config.format.json_schema.schema: Input should be a valid dictionary"},
		{"I4 extra key", sonnet45, reqWith(anthropicOutput(`{"type":"json_schema","name":"x","schema":{"type":"object"}}`), hi), "output_config.format.json_schema.name: Extra inputs are not permitted"},
		{"I4 root not an object schema", sonnet45, reqWith(anthropicOutput(`{"type":"json_schema","schema":{"type":"string"}}`), hi), "output_config.format.schema: The root schema must have type 'object'."},
		{"I4 I2 applies", sonnet45, reqWith(anthropicOutput(`{"type":"json_schema","schema":`+numbers(`"minimum":1,"maximum":5`)+`}`), hi),
			"output_config.format.schema: For 'number' type, properties maximum, minimum are not supported"},
		{"I4 not an object", sonnet45, reqWith(anthropicOutput(`"json"`), hi), "output_config.format: Input should be a valid dictionary or object to extract fields from"},
		{"I4 unread off Claude", deepseek32, reqWith(join(outputConfig(personSchema), fields(`"reasoning_config":"low"`)), hi), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, refusal(t, tc.model, tc.body, false))
		})
	}
}

func TestValidateStrictTools(t *testing.T) {
	t.Parallel()
	union := func(keyword string) string {
		return `{"type":"object","properties":{"target":{"type":"object","properties":{"v":{"` + keyword + `":[{"type":"string"},{"type":"integer"}]}}}}}`
	}
	i5 := func(i int, keyword, at string) string {
		return "toolConfig.tools." + strconv.Itoa(i) + ".toolSpec.inputSchema.json: strict tools do not support the keyword " + keyword + " (at " + at + "). Remove it, or set toolSpec.strict to false, and try again."
	}
	for _, tc := range []struct {
		name, model, body, want string
	}{
		{"taken", sonnet45, reqWith(tools(weather, strictTool("save", weatherSchema)), hi), ""},
		{"taken on DeepSeek v3.2", deepseek32, reqWith(tools(strictTool("save", weatherSchema)), hi), ""},
		{"strict false anywhere", sonnet4, reqWith(tools(`{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object"}},"strict":false}}`), hi), ""},
		{"not strict, unions fine", sonnet45, reqWith(tools(`{"toolSpec":{"name":"a","inputSchema":{"json":`+union("oneOf")+`}}}`), hi), ""},
		{"bounds are not I2's", sonnet45, reqWith(tools(strictTool("a", `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9}}}`)), hi), ""},

		// I7
		{"I7 Sonnet 4", sonnet4, reqWith(tools(weather, cachePt, strictTool("save", weatherSchema)), hi),
			"This model doesn't support the toolConfig.tools.2.toolSpec.strict field. Remove toolConfig.tools.2.toolSpec.strict and try again"},
		{"I7 Nova", nova, reqWith(tools(strictTool("save", weatherSchema)), hi),
			"This model doesn't support the toolConfig.tools.0.toolSpec.strict field. Remove toolConfig.tools.0.toolSpec.strict and try again"},
		// I5
		{"I5 oneOf", sonnet45, reqWith(tools(weather, strictTool("a", union("oneOf"))), hi), i5(1, "oneOf", "/properties/target/properties/v")},
		{"I5 anyOf", haiku45, reqWith(tools(strictTool("a", union("anyOf"))), hi), i5(0, "anyOf", "/properties/target/properties/v")},
		{"I5 allOf at the root", opus46, reqWith(tools(strictTool("a", `{"type":"object","allOf":[{"required":["a"]}]}`)), hi), i5(0, "allOf", "/")},
		{"I5 not in items", sonnet45, reqWith(tools(strictTool("a", `{"type":"object","properties":{"l":{"type":"array","items":{"not":{"type":"null"}}}}}`)), hi), i5(0, "not", "/properties/l/items")},
		{"I5 in $defs", sonnet45, reqWith(tools(strictTool("a", `{"type":"object","$defs":{"a/b":{"oneOf":[]}}}`)), hi), i5(0, "oneOf", "/$defs/a~1b")},
		{"strict not a boolean", sonnet45, reqWith(tools(`{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object"}},"strict":"true"}}`), hi),
			"Malformed input request: #/toolConfig/tools/0/toolSpec/strict: expected type: Boolean, found: String, reformat your input and try again."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, refusal(t, tc.model, tc.body, false))
		})
	}
}

// TestStructuredOutputAnswers: a text answer is JSON built from the schema, compact, an
// instance of it; tools the last user turn names are still called, without text; tool results
// are answered in JSON; streams carry the same JSON in text deltas.
func TestStructuredOutputAnswers(t *testing.T) {
	t.Parallel()
	_, url := startSim(t, New(Options{}))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	for _, tc := range []struct {
		name, model, body, text string
		calls                   int
	}{
		{"text", sonnet45, reqWith(outputConfig(personSchema), hi), personJSON, 0},
		{"Claude's form", sonnet45, reqWith(anthropicOutput(`{"type":"json_schema","schema":`+personSchema+`}`), hi), personJSON, 0},
		{"DeepSeek v3.2", deepseek32, reqWith(outputConfig(personSchema), hi), personJSON, 0},
		{"a named tool is called first", sonnet45, reqWith(join(weatherTC, outputConfig(personSchema)), user(`{"text":"Use get_weather."}`)), "", 1},
		{"tool results", sonnet45, reqWith(join(weatherTC, outputConfig(personSchema)), hi, callA, user(resultA)), personJSON, 0},
		{"no tool named", sonnet45, reqWith(join(weatherTC, outputConfig(personSchema)), hi), personJSON, 0},
		{"with thinking", sonnet45, reqWith(join(outputConfig(personSchema), fields(thinkOn), max4k), hi), personJSON, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := post(t, url, "/model/"+tc.model+"/converse", "Bearer k", tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			a := answerOf(t, body)
			var text string
			calls := 0
			for _, b := range a.Output.Message.Content {
				if b.Text != nil {
					text += *b.Text
				}
				if b.ToolUse != nil {
					calls++
				}
			}
			assert.Equal(t, tc.text, text)
			assert.Equal(t, tc.calls, calls)
			if calls > 0 {
				assert.Equal(t, stopToolUse, a.StopReason)
				return
			}
			assert.Equal(t, stopEndTurn, a.StopReason)
			assert.Empty(t, violations(t, personSchema, text))

			_, streamBody := post(t, url, "/model/"+tc.model+"/converse-stream", "Bearer k", tc.body)
			assert.Contains(t, string(streamBody), `"text":"{\"name\":`, "the JSON comes in text deltas")
		})
	}
}

// TestStructuredOutputSDK: the real SDK sends outputConfig and reads the JSON back, unary and
// streamed, and meets I2 and I7 as errors.
func TestStructuredOutputSDK(t *testing.T) {
	t.Parallel()
	client, _ := startSim(t, New(Options{}))
	format := func(schema string) *types.OutputConfig {
		return &types.OutputConfig{TextFormat: &types.OutputFormat{
			Type: types.OutputFormatTypeJsonSchema,
			Structure: &types.OutputFormatStructureMemberJsonSchema{Value: types.JsonSchemaDefinition{
				Name: aws.String("person"), Schema: aws.String(schema)}},
		}}
	}
	out, err := client.Converse(t.Context(), &bedrockruntime.ConverseInput{
		ModelId:      aws.String(sonnet45),
		Messages:     []types.Message{userText("Who is it?")},
		OutputConfig: format(personSchema),
	})
	require.NoError(t, err)
	msg := outputMessage(t, out)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, personJSON, msg.Content[0].(*types.ContentBlockMemberText).Value)
	assert.Equal(t, types.StopReasonEndTurn, out.StopReason)

	stream, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
		ModelId:      aws.String(sonnet45),
		Messages:     []types.Message{userText("Who is it?")},
		OutputConfig: format(personSchema),
	})
	require.NoError(t, err)
	s := collect(t, stream)
	require.NoError(t, s.err)
	assert.Equal(t, personJSON, s.text)
	assert.Greater(t, s.textDeltas, 3, "several small deltas")
	assert.Equal(t, []string{"messageStart:assistant", "text+", "stop", "messageStop", "metadata"}, compress(s.order))
	assert.Equal(t, types.StopReasonEndTurn, s.stopReason)

	// A strict tool through the SDK's own member.
	out, err = client.Converse(t.Context(), &bedrockruntime.ConverseInput{
		ModelId:  aws.String(sonnet45),
		Messages: []types.Message{userText("Use get_weather.")},
		ToolConfig: toolConfig(&types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name:        aws.String("get_weather"),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}})},
			Strict:      aws.Bool(true),
		}}),
		OutputConfig: format(personSchema),
	})
	require.NoError(t, err)
	msg = outputMessage(t, out)
	require.Len(t, msg.Content, 1, "the call, without text")
	assert.Equal(t, map[string]any{"city": "example"}, inputOf(t, msg.Content[0].(*types.ContentBlockMemberToolUse).Value.Input))

	for _, tc := range []struct{ model, schema, want string }{
		{sonnet4, personSchema, "This model doesn't support the outputConfig.textFormat field. Remove outputConfig.textFormat and try again"},
		{opus46, `{"type":"object","properties":{"n":{"type":"number","minimum":0,"maximum":1}}}`,
			"output_config.format.schema: For 'number' type, properties maximum, minimum are not supported"},
	} {
		_, err := client.ConverseStream(t.Context(), &bedrockruntime.ConverseStreamInput{
			ModelId: aws.String(tc.model), Messages: []types.Message{userText("Hi")}, OutputConfig: format(tc.schema)})
		require.Error(t, err)
		assert.Equal(t, "ValidationException", errorCode(t, err))
		assert.Equal(t, tc.want, errorMessageOf(t, err))
	}
}

// TestStructuredOutputCacheKey: outputConfig is part of every cached prefix, so a changed
// schema reads nothing the old one wrote (docs/BEDROCK.md H7).
func TestStructuredOutputCacheKey(t *testing.T) {
	t.Parallel()
	sim := New(Options{})
	_, url := startSim(t, sim)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	system := `"system":[{"text":"` + strings.Repeat("Policy text. ", 400) + `"},` + cachePt + `]`
	ask := func(schema string) tokenUsage {
		_, body := post(t, url, "/model/"+sonnet45+"/converse", "Bearer k", reqWith(join(system, outputConfig(schema)), hi))
		return answerOf(t, body).Usage
	}
	first := ask(personSchema)
	assert.Positive(t, first.CacheWriteInputTokens)
	assert.Zero(t, first.CacheReadInputTokens)
	assert.Equal(t, first.CacheWriteInputTokens, ask(personSchema).CacheReadInputTokens, "the same schema reads the prefix")
	other := ask(`{"type":"object","properties":{"id":{"type":"string"}}}`)
	assert.Zero(t, other.CacheReadInputTokens, "another schema misses")
	assert.Positive(t, other.CacheWriteInputTokens)
}
