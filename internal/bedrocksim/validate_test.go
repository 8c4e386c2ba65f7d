package bedrocksim

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	sonnet4  = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	sonnet45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0" // no temperature with topP
	opus46   = "global.anthropic.claude-opus-4-6-v1"          // no prefill
	nova     = "us.amazon.nova-pro-v1:0"
	llama    = "meta.llama3-1-70b-instruct-v1:0" // toolChoice auto only
	mistral  = "mistral.mistral-large-2407-v1:0" // toolChoice auto and any
	titan    = "amazon.titan-text-express-v1"    // no tools
	appARN   = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abcdef123456"
)

// JSON pieces for building requests.
const (
	hi        = `{"role":"user","content":[{"text":"Hi"}]}`
	hello     = `{"role":"assistant","content":[{"text":"Hello"}]}`
	weather   = `{"toolSpec":{"name":"get_weather","description":"Weather","inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}}}}}}`
	weatherTC = `"toolConfig":{"tools":[` + weather + `]}`
	callA     = `{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{"city":"Paris"}}}]}`
	callAB    = `{"role":"assistant","content":[{"text":"Calling."},{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{}}},{"toolUse":{"toolUseId":"tooluse_b","name":"get_weather","input":{}}}]}`
	resultA   = `{"toolResult":{"toolUseId":"tooluse_a","content":[{"json":{"temp":21}}]}}`
	resultB   = `{"toolResult":{"toolUseId":"tooluse_b","content":[{"text":"sunny"}],"status":"success"}}`
	cachePt   = `{"cachePoint":{"type":"default"}}`
)

// Image bytes (base64): a 1×1 PNG and a 1×1 GIF.
const (
	pngBytes = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	gifBytes = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
)

func image(format, b64 string) string {
	return `{"image":{"format":"` + format + `","source":{"bytes":"` + b64 + `"}}}`
}

// doc is a document block of a minimal PDF.
func doc(format, name string) string {
	return `{"document":{"format":"` + format + `","name":"` + name + `","source":{"bytes":"JVBERi0xLjQKJSVFT0YK"}}}`
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func req(messages ...string) string {
	return `{"messages":[` + strings.Join(messages, ",") + `]}`
}

func reqWith(extra string, messages ...string) string {
	return `{"messages":[` + strings.Join(messages, ",") + `],` + extra + `}`
}

func user(blocks ...string) string {
	return `{"role":"user","content":[` + strings.Join(blocks, ",") + `]}`
}

func tools(specs ...string) string {
	return `"toolConfig":{"tools":[` + strings.Join(specs, ",") + `]}`
}

func spec(name string) string {
	return `{"toolSpec":{"name":"` + name + `","inputSchema":{"json":{"type":"object"}}}}`
}

// manyTools is n valid tools, then the given one.
func manyTools(n int, last string) string {
	specs := make([]string, 0, n+1)
	for i := range n {
		specs = append(specs, spec(fmt.Sprintf("tool_%d", i)))
	}
	return tools(append(specs, last)...)
}

func TestValidateJSON(t *testing.T) {
	t.Parallel()
	longName := strings.Repeat("fs.read", 10) // 70 characters, with dots
	for _, tc := range []struct {
		name, model, body, want string
	}{
		// Valid requests.
		{"text", sonnet4, req(hi), ""},
		{"system and inference", sonnet4, `{"system":[{"text":"Be brief."},` + cachePt + `],"inferenceConfig":{"maxTokens":100,"temperature":0.5,"stopSequences":["END"]},"messages":[` + hi + `]}`, ""},
		{"tool round trip", sonnet4, reqWith(weatherTC, hi, callA, user(resultA, `{"text":"and?"}`)), ""},
		{"parallel results", sonnet4, reqWith(weatherTC, hi, callAB, user(resultB, resultA)), ""},
		{"text before results off Claude", nova, reqWith(weatherTC, hi, callA, user(`{"text":"here"}`, resultA)), ""},
		{"prefill allowed on Sonnet 4", sonnet4, req(hi, hello), ""},
		{"temperature and topP on Sonnet 4", sonnet4, reqWith(`"inferenceConfig":{"temperature":0.2,"topP":0.9}`, hi), ""},
		{"four cache points", sonnet4, reqWith(`"system":[{"text":"s"},`+cachePt+`],`+tools(weather, cachePt), user(`{"text":"a"}`, cachePt), `{"role":"assistant","content":[{"text":"b"},`+cachePt+`]}`, hi), ""},
		{"application inference profile takes any", appARN, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"any":{}}}`, hi), ""},
		{"document block", sonnet4, req(user(`{"document":{"format":"txt","name":"a","source":{"bytes":"aGk="}}}`, `{"text":"summarize"}`)), ""},
		{"guard content in system", sonnet4, `{"system":[{"guardContent":{"text":{"text":"x"}}}],"messages":[` + hi + `]}`, ""},
		{"tool result error with content", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[{"text":"boom"}],"status":"error"}}`)), ""},
		{"toolChoice tool", sonnet4, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"tool":{"name":"get_weather"}}}`, hi), ""},
		{"toolChoice any on Mistral Large", mistral, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"any":{}}}`, hi), ""},

		// A1
		{"A1 starts with assistant", sonnet4, req(hello, hi), "A conversation must start with a user message. Try again with a conversation that starts with a user message."},
		{"A1 no messages", sonnet4, `{"messages":[]}`, "A conversation must start with a user message. Try again with a conversation that starts with a user message."},
		// A2
		{"A2 two user turns", sonnet4, req(hi, hi), "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."},
		// A3
		{"A3 empty content", sonnet4, req(hi, hello, `{"role":"user","content":[]}`), "The content field in the Message object at messages.2 is empty. Add a ContentBlock object to the content field and try again."},
		{"A3 missing content", sonnet4, req(`{"role":"user"}`), "The content field in the Message object at messages.0 is empty. Add a ContentBlock object to the content field and try again."},
		// A4
		{"A4 blank text", sonnet4, req(hi, hello, user(`{"text":"ok"}`, `{"text":" \n\t"}`)), "The text field in the ContentBlock object at messages.2.content.1 is blank. Add text to the text field, and try again."},
		{"A4 empty text", sonnet4, req(user(`{"text":""}`)), "The text field in the ContentBlock object at messages.0.content.0 is blank. Add text to the text field, and try again."},
		{"A4 blank system", sonnet4, `{"system":[{"text":"  "}],"messages":[` + hi + `]}`, "The text field in the SystemContentBlock object at system.0 is blank. Add text to the text field, and try again."},
		// A5
		{"A5 system role", sonnet4, req(`{"role":"system","content":[{"text":"Be brief."}]}`, hi), "Malformed input request: #/messages/0/role: system is not a valid enum value, reformat your input and try again."},
		{"A5 tool role", sonnet4, req(hi, `{"role":"tool","content":[{"text":"x"}]}`), "Malformed input request: #/messages/1/role: tool is not a valid enum value, reformat your input and try again."},
		{"A5 missing role", sonnet4, req(`{"content":[{"text":"x"}]}`), "Malformed input request: #/messages/0: required key [role] not found, reformat your input and try again."},
		// A6
		{"A6 OpenAI-style block", sonnet4, req(user(`{"type":"text","text":"Hi"}`)), "Malformed input request: #/messages/0/content/0: extraneous key [type] is not permitted, reformat your input and try again."},
		{"A6 key in message", sonnet4, req(`{"role":"user","content":[{"text":"Hi"}],"name":"bob"}`), "Malformed input request: #/messages/0: extraneous key [name] is not permitted, reformat your input and try again."},
		{"A6 key in toolUse", sonnet4, reqWith(weatherTC, hi, `{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"get_weather","input":{},"arguments":"{}"}}]}`), "Malformed input request: #/messages/1/content/0/toolUse: extraneous key [arguments] is not permitted, reformat your input and try again."},
		{"A6 key in toolResult content", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[{"type":"text","text":"x"}]}}`)), "Malformed input request: #/messages/2/content/0/toolResult/content/0: extraneous key [type] is not permitted, reformat your input and try again."},
		{"A6 top-level key", sonnet4, `{"model":"x","messages":[` + hi + `]}`, "Malformed input request: #: extraneous key [model] is not permitted, reformat your input and try again."},
		{"A6 two members", sonnet4, req(user(`{"text":"Hi","cachePoint":{"type":"default"}}`)), "Malformed input request: #/messages/0/content/0: expected maxProperties: 1, actual: 2, reformat your input and try again."},
		{"A6 no member", sonnet4, req(user(`{}`)), "Malformed input request: #/messages/0/content/0: expected minProperties: 1, actual: 0, reformat your input and try again."},
		{"A6 null member", sonnet4, req(user(`{"text":null}`)), "Malformed input request: #/messages/0/content/0/text: expected a value, found: null, reformat your input and try again."},
		{"A6 message not an object", sonnet4, `{"messages":["Hi"]}`, "Malformed input request: #/messages/0: expected type: JSONObject, found: String, reformat your input and try again."},
		{"A6 tool with two members", sonnet4, reqWith(`"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object"}}},"cachePoint":{"type":"default"}}]}`, hi), "Malformed input request: #/toolConfig/tools/0: expected maxProperties: 1, actual: 2, reformat your input and try again."},
		// A7
		{"A7 prefill on Opus 4.6", opus46, req(hi, hello), "This model does not support assistant message prefill. The conversation must end with a user message."},
		// A8
		{"A8 no tools", sonnet4, reqWith(`"toolConfig":{"tools":[]}`, hi), "1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		// A9: the first is docs/BEDROCK.md's verbatim example, the second LiteLLM #24668's.
		{"A9 name with a space", sonnet4, reqWith(manyTools(21, spec("Complete Session")), hi), "1 validation error detected: Value 'Complete Session' at 'toolConfig.tools.22.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"},
		{"A9 empty name and description", nova, reqWith(`"toolConfig":{"tools":[{"toolSpec":{"inputSchema":{"json":{"type":"object","properties":{},"required":[]}},"name":"","description":""}}]}`, hi),
			"3 validation errors detected: Value '' at 'toolConfig.tools.1.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+; Value '' at 'toolConfig.tools.1.member.toolSpec.name' failed to satisfy constraint: Member must have length greater than or equal to 1; Value '' at 'toolConfig.tools.1.member.toolSpec.description' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"A9 long name", sonnet4, reqWith(tools(spec(strings.Repeat("a", 65))), hi), "1 validation error detected: Value '" + strings.Repeat("a", 65) + "' at 'toolConfig.tools.1.member.toolSpec.name' failed to satisfy constraint: Member must have length less than or equal to 64"},
		{"A9 history name", sonnet4, reqWith(weatherTC, hi, `{"role":"assistant","content":[{"text":"x"},{"toolUse":{"toolUseId":"tooluse_a","name":"`+longName+`","input":{}}}]}`, user(resultA)),
			"2 validation errors detected: Value at 'messages.2.member.content.2.member.toolUse.name' failed to satisfy constraint: Member must have length less than or equal to 64; Value at 'messages.2.member.content.2.member.toolUse.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"},
		{"A9 duplicate names", sonnet4, reqWith(tools(weather, weather), hi), "The tool name get_weather is duplicated in toolConfig.tools. Tool names must be unique."},
		{"A9 toolChoice name", sonnet4, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"tool":{"name":"fs.read"}}}`, hi), "1 validation error detected: Value 'fs.read' at 'toolConfig.toolChoice.tool.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"},
		// A10
		{"A10 empty description", sonnet4, reqWith(tools(`{"toolSpec":{"name":"a","description":"","inputSchema":{"json":{"type":"object"}}}}`), hi), "1 validation error detected: Value '' at 'toolConfig.tools.1.member.toolSpec.description' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		// A11
		{"A11 string schema", sonnet4, reqWith(tools(spec("a"), spec("b"), spec("c"), `{"toolSpec":{"name":"d","inputSchema":{"json":{"type":"string"}}}}`), hi), "The value at toolConfig.tools.3.toolSpec.inputSchema.json.type must be one of the following: object."},
		{"A11 untyped schema", sonnet4, reqWith(tools(`{"toolSpec":{"name":"d","inputSchema":{"json":{"properties":{}}}}}`), hi), "The value at toolConfig.tools.0.toolSpec.inputSchema.json.type must be one of the following: object."},
		{"A11 missing schema", sonnet4, reqWith(tools(`{"toolSpec":{"name":"d"}}`), hi), "The value at toolConfig.tools.0.toolSpec.inputSchema.json.type must be one of the following: object."},
		// A12
		{"A12 any on Llama", llama, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"any":{}}}`, hi), "This model doesn't support the toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again"},
		{"A12 tool on Mistral Large", mistral, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"tool":{"name":"get_weather"}}}`, hi), "This model doesn't support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again"},
		{"A12 unknown tool", sonnet4, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"tool":{"name":"get_time"}}}`, hi), "The tool get_time named in toolConfig.toolChoice.tool.name is not defined in toolConfig.tools."},
		{"A12 none", sonnet4, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"none":{}}}`, hi), "Malformed input request: #/toolConfig/toolChoice: extraneous key [none] is not permitted, reformat your input and try again."},
		{"A12 empty choice", sonnet4, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{}}`, hi), "Malformed input request: #/toolConfig/toolChoice: expected minProperties: 1, actual: 0, reformat your input and try again."},
		{"A12 two choices", sonnet4, reqWith(`"toolConfig":{"tools":[`+weather+`],"toolChoice":{"auto":{},"any":{}}}`, hi), "Malformed input request: #/toolConfig/toolChoice: expected maxProperties: 1, actual: 2, reformat your input and try again."},
		// A13
		{"A13 toolUse without toolConfig", sonnet4, req(hi, callA, user(resultA)), "The toolConfig field must be defined when using toolUse and toolResult content blocks."},
		{"A13 toolResult without toolConfig", sonnet4, req(hi, hello, user(resultA)), "The toolConfig field must be defined when using toolUse and toolResult content blocks."},
		// A14
		{"A14 id with a dot", sonnet4, reqWith(weatherTC, hi, `{"role":"assistant","content":[{"toolUse":{"toolUseId":"call.1","name":"get_weather","input":{}}}]}`, user(`{"toolResult":{"toolUseId":"call.1","content":[{"text":"x"}]}}`)),
			"2 validation errors detected: Value at 'messages.2.member.content.1.member.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+; Value at 'messages.3.member.content.1.member.toolResult.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"},
		{"A14 long id", sonnet4, reqWith(weatherTC, hi, hello, user(`{"toolResult":{"toolUseId":"`+strings.Repeat("x", 65)+`","content":[{"text":"x"}]}}`)),
			"1 validation error detected: Value at 'messages.3.member.content.1.member.toolResult.toolUseId' failed to satisfy constraint: Member must have length less than or equal to 64"},
		{"A14 empty id", sonnet4, reqWith(weatherTC, hi, `{"role":"assistant","content":[{"toolUse":{"toolUseId":"","name":"get_weather","input":{}}}]}`),
			"2 validation errors detected: Value at 'messages.2.member.content.1.member.toolUse.toolUseId' failed to satisfy constraint: Member must have length greater than or equal to 1; Value at 'messages.2.member.content.1.member.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"},
		// A15
		{"A15 missing results", sonnet4, reqWith(weatherTC, hi, callAB, user(`{"text":"go on"}`)), "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a, tooluse_b"},
		{"A15 one of two", sonnet4, reqWith(weatherTC, hi, callAB, user(resultA)), "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_b"},
		{"A15 trailing toolUse", sonnet4, reqWith(weatherTC, hi, callA), "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a"},
		{"A15 trailing text and toolUse after a round", sonnet4, reqWith(weatherTC, hi, callA, user(resultA),
			`{"role":"assistant","content":[{"text":"Two more."},{"toolUse":{"toolUseId":"tooluse_c","name":"get_weather","input":{}}},{"toolUse":{"toolUseId":"tooluse_d","name":"get_weather","input":{}}}]}`),
			"Expected toolResult blocks at messages.4.content for the following Ids: tooluse_c, tooluse_d"},
		{"A15 trailing text only is prefill", sonnet4, reqWith(weatherTC, hi, callA, user(resultA), hello), ""},
		{"A15 trailing toolUse before A7", opus46, reqWith(weatherTC, hi, callAB), "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a, tooluse_b"},
		{"A15 trailing toolUse on Nova", nova, reqWith(weatherTC, hi, callA), "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a"},
		// A16
		{"A16 too many results", sonnet4, reqWith(weatherTC, hi, callA, user(resultA, resultB)), "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn."},
		{"A16 unknown id", sonnet4, reqWith(weatherTC, hi, callA, user(resultB)), "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn."},
		{"A16 result without call", sonnet4, reqWith(weatherTC, hi, hello, user(resultA)), "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn."},
		{"A16 result first", sonnet4, reqWith(weatherTC, user(resultA)), "The number of toolResult blocks at messages.0.content exceeds the number of toolUse blocks of previous turn."},
		// A17
		{"A17 json array", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[{"json":[1,2]}]}}`)), "The format of the value at messages.2.content.0.toolResult.content.0.json is invalid. Provide a json object for the field and try again."},
		{"A17 json string", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[{"text":"a"},{"json":"x"}]}}`)), "The format of the value at messages.2.content.0.toolResult.content.1.json is invalid. Provide a json object for the field and try again."},
		{"toolUse input not an object", sonnet4, reqWith(weatherTC, hi, `{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"get_weather","input":"{}"}}]}`), "The format of the value at messages.1.content.0.toolUse.input is invalid. Provide a json object for the field and try again."},
		// A18
		{"A18 error without content", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[],"status":"error"}}`)), "The content field at messages.2.content.0.toolResult cannot be empty when status value is error."},
		{"A18 bad status", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[{"text":"x"}],"status":"failed"}}`)), "Malformed input request: #/messages/2/content/0/toolResult/status: failed is not a valid enum value, reformat your input and try again."},
		// A19
		{"A19 text before results on Claude", sonnet4, reqWith(weatherTC, hi, callA, user(`{"text":"here you go"}`, resultA)), "messages.2.content: Conversation blocks and tool result blocks cannot be provided in the same turn."},
		{"A19 on an application profile", appARN, reqWith(weatherTC, hi, callAB, user(resultA, `{"text":"and"}`, resultB)), "messages.2.content: Conversation blocks and tool result blocks cannot be provided in the same turn."},
		// A20
		{"A20 maxTokens 0", sonnet4, reqWith(`"inferenceConfig":{"maxTokens":0}`, hi), "1 validation error detected: Value '0' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1"},
		{"A20 temperature and topP out of range", sonnet4, reqWith(`"inferenceConfig":{"temperature":1.5,"topP":-0.1}`, hi), "2 validation errors detected: Value '1.5' at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1; Value '-0.1' at 'inferenceConfig.topP' failed to satisfy constraint: Member must have value greater than or equal to 0"},
		{"A20 empty stop sequence", sonnet4, reqWith(`"inferenceConfig":{"stopSequences":["END",""]}`, hi), "1 validation error detected: Value '' at 'inferenceConfig.stopSequences.2.member' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"A20 temperature with topP on Sonnet 4.5", sonnet45, reqWith(`"inferenceConfig":{"temperature":0.2,"topP":0.9}`, hi), "`temperature` and `top_p` cannot both be specified for this model. Please use only one."},
		{"A20 unknown inference key", sonnet4, reqWith(`"inferenceConfig":{"top_k":5}`, hi), "Malformed input request: #/inferenceConfig: extraneous key [top_k] is not permitted, reformat your input and try again."},
		// A22
		{"A22 five cache points", sonnet4, reqWith(`"system":[{"text":"s"},`+cachePt+`],`+tools(weather, cachePt), user(`{"text":"a"}`, cachePt), `{"role":"assistant","content":[{"text":"b"},`+cachePt+`]}`, user(`{"text":"c"}`, cachePt)), "The model returned the following errors: A maximum of 4 blocks with cache_control may be provided. Found 5."},
		// Others
		{"duplicate toolUse ids", sonnet4, reqWith(weatherTC, hi, `{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{}}},{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{}}}]}`, user(resultA)), "messages.1.content.1: toolUse ids must be unique. The toolUseId tooluse_a appears more than once in the conversation."},
		{"model without tools", titan, reqWith(weatherTC, hi), "This model doesn't support tool use."},
		{"toolUse in a user turn", sonnet4, reqWith(weatherTC, user(`{"toolUse":{"toolUseId":"a","name":"get_weather","input":{}}}`)), "messages.0.content.0: toolUse blocks can only be in assistant messages."},
		// K: images and documents.
		{"png image", sonnet4, req(user(`{"text":"what?"}`, image("png", pngBytes))), ""},
		{"gif image in a tool result", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[`+image("gif", gifBytes)+`]}}`)), ""},
		{"document with text", sonnet4, req(user(doc("pdf", "Q3 report (final) [v2]"), `{"text":"Summarize."}`)), ""},
		{"K2 image format bmp", sonnet4, req(user(image("bmp", pngBytes))), "1 validation error detected: Value at 'messages.1.member.content.1.member.image.format' failed to satisfy constraint: Member must satisfy enum value set: [png, jpeg, gif, webp]"},
		{"K2 image format jpg and PNG", sonnet4, req(hi, hello, user(`{"text":"x"}`, image("jpg", pngBytes), image("PNG", pngBytes))), "2 validation errors detected: Value at 'messages.3.member.content.2.member.image.format' failed to satisfy constraint: Member must satisfy enum value set: [png, jpeg, gif, webp]; Value at 'messages.3.member.content.3.member.image.format' failed to satisfy constraint: Member must satisfy enum value set: [png, jpeg, gif, webp]"},
		{"K2 tool result image format", sonnet4, reqWith(weatherTC, hi, callA, user(`{"toolResult":{"toolUseId":"tooluse_a","content":[`+image("jpg", pngBytes)+`]}}`)), "1 validation error detected: Value at 'messages.3.member.content.1.member.toolResult.content.1.member.image.format' failed to satisfy constraint: Member must satisfy enum value set: [png, jpeg, gif, webp]"},
		{"K2 bytes of another format", sonnet4, req(user(image("png", gifBytes))), "The model returned the following errors: The provided image does not match the specified image format."},
		{"K2 bytes of no image", sonnet4, req(user(image("png", "aVZCT1J3MEtHZ28="))), "Failed to sanitize image: Invalid or unsupported image format"},
		{"empty image bytes", sonnet4, req(user(image("png", ""))), "The image bytes at messages.0.content.0.image.source are empty. Provide image bytes and try again."},
		{"K1 image in an assistant turn", sonnet4, req(hi, `{"role":"assistant","content":[`+image("png", pngBytes)+`]}`), "messages.1.content.0: image blocks can only be in user messages."},
		{"K1 21 images", sonnet4, req(user(append([]string{`{"text":"x"}`}, repeat(image("png", pngBytes), 20)...)...), hello, user(image("png", pngBytes))), "The model returned the following errors: messages: too many images: image_count > 20"},
		{"K3 document format", sonnet4, req(user(doc("pptx", "deck"), `{"text":"x"}`)), "1 validation error detected: Value at 'messages.1.member.content.1.member.document.format' failed to satisfy constraint: Member must satisfy enum value set: [pdf, csv, doc, docx, xls, xlsx, html, txt, md]"},
		{"K3 empty document name", sonnet4, req(user(doc("pdf", ""), `{"text":"x"}`)), "1 validation error detected: Value at 'messages.1.member.content.1.member.document.name' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"K3 201-character document name", sonnet4, req(user(doc("pdf", strings.Repeat("a", 201)), `{"text":"x"}`)), "1 validation error detected: Value at 'messages.1.member.content.1.member.document.name' failed to satisfy constraint: Member must have length less than or equal to 200"},
		{"K3 dot in a document name", sonnet4, req(user(doc("pdf", "report.pdf"), `{"text":"x"}`)), "The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets. The name can't contain more than one consecutive whitespace character. Check that the file name conforms to these restrictions and retry your request."},
		{"K3 two spaces in a document name", sonnet4, req(user(doc("pdf", "a  b"), `{"text":"x"}`)), "The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets. The name can't contain more than one consecutive whitespace character. Check that the file name conforms to these restrictions and retry your request."},
		{"K3 duplicate names across turns", sonnet4, req(user(doc("pdf", "a"), `{"text":"x"}`), hello, user(doc("txt", "a"), `{"text":"y"}`)), "Messages can't contain duplicate document names."},
		{"K3 document without text", sonnet4, req(user(doc("pdf", "a"))), "A text block must be included when using documents."},
		{"K1 document in an assistant turn", sonnet4, req(hi, `{"role":"assistant","content":[{"text":"x"},`+doc("pdf", "a")+`]}`), "messages.1.content.1: document blocks can only be in user messages."},
		{"K1 6 documents", sonnet4, req(user(doc("pdf", "a"), doc("pdf", "b"), doc("pdf", "c"), `{"text":"x"}`), hello, user(doc("pdf", "d"), doc("pdf", "e"), doc("pdf", "f"), `{"text":"y"}`)), "You can't include more than 5 documents in a request."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateJSON(tc.model, []byte(tc.body))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var apiErr *apiError
			require.True(t, errors.As(err, &apiErr), "%T", err)
			assert.Equal(t, codeValidation, apiErr.Code)
			assert.Equal(t, http.StatusBadRequest, apiErr.Status)
			assert.Equal(t, tc.want, apiErr.Message)
		})
	}
}

func TestValidateJSONMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		``, `{`, `[]`, `null`, `"x"`, `{"messages":{}}`, `{"messages":[{"role":5,"content":[]}]}`,
		`{"messages":[{"role":"user","content":[{"text":5}]}]}`, `{"inferenceConfig":{"maxTokens":1e10},"messages":[]}`,
		`{"inferenceConfig":{"temperature":1e400},"messages":[]}`, `{"messages":[{"role":"user","content":"Hi"}]}`,
	} {
		err := ValidateJSON(sonnet4, []byte(body))
		var apiErr *apiError
		require.True(t, errors.As(err, &apiErr), "%q: %v", body, err)
		assert.Equal(t, codeValidation, apiErr.Code, body)
		assert.True(t, strings.HasPrefix(apiErr.Message, "Malformed input request: "), "%q: %s", body, apiErr.Message)
	}
}
