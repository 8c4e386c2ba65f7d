package jsonapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	v1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
)

func mustValue(t *testing.T, v any) *structpb.Value {
	t.Helper()
	s, err := structpb.NewValue(v)
	require.NoError(t, err)
	return s
}

// protocolExample is the request of docs/PROTOCOL.md section 3, verbatim.
const protocolExample = `{
  "model": "us.anthropic.claude-sonnet-4-20250514-v1:0",
  "messages": [
    {"role": "system", "content": "You are a policy assistant."},
    {"role": "user", "content": "Require pod labels."},
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "call_1", "type": "function",
       "function": {"name": "save_policy", "arguments": "{\"filename\":\"p.yaml\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"saved\":true}"}
  ],
  "tools": [
    {"type": "function", "function": {"name": "save_policy", "description": "Save a policy",
      "parameters": {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}}}
  ],
  "tool_choice": "auto",
  "stream": false,
  "max_tokens": 1024, "temperature": 0.2, "top_p": 0.9, "stop": ["END"]
}`

func TestDecodeChatRequest(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}`
	user := func(s string) *v1.Message { return &v1.Message{Role: "user", Content: s} }

	tests := []struct {
		name string
		body string
		want *v1.ChatRequest
	}{
		{
			name: "protocol example",
			body: protocolExample,
			want: &v1.ChatRequest{
				Model: "us.anthropic.claude-sonnet-4-20250514-v1:0",
				Messages: []*v1.Message{
					{Role: "system", Content: "You are a policy assistant."},
					{Role: "user", Content: "Require pod labels."},
					{Role: "assistant", ToolCalls: []*v1.ToolCall{{
						Id: "call_1", Type: "function",
						Function: &v1.FunctionCall{Name: "save_policy", Arguments: `{"filename":"p.yaml"}`},
					}}},
					{Role: "tool", ToolCallId: "call_1", Content: `{"saved":true}`},
				},
				Tools: []*v1.Tool{{Type: "function", Function: &v1.FunctionDefinition{
					Name: "save_policy", Description: "Save a policy", ParametersJson: schema,
				}}},
				ToolChoice:  structpb.NewStringValue("auto"),
				MaxTokens:   proto.Int32(1024),
				Temperature: proto.Float64(0.2),
				TopP:        proto.Float64(0.9),
				Stop:        []string{"END"},
			},
		},
		{name: "empty object", body: `{}`, want: &v1.ChatRequest{}},
		{name: "whitespace everywhere", body: " \t\r\n{ \"model\" : \"m\" , \"stream\" :true }\n ",
			want: &v1.ChatRequest{Model: "m", Stream: true}},
		{name: "stream true", body: `{"stream":true}`, want: &v1.ChatRequest{Stream: true}},
		{name: "content null", body: `{"messages":[{"role":"assistant","content":null}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{{Role: "assistant"}}}},
		{name: "content absent", body: `{"messages":[{"role":"assistant"}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{{Role: "assistant"}}}},
		{
			name: "content parts",
			body: `{"messages":[{"role":"user","content":[
				{"type":"text","text":"What is this?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"high"}},
				{"type":"image_url","image_url":"data:image/jpeg;base64,BBBB"},
				{"type":"image_url","image_url":null},
				{"type":"text","text":null}
			]}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{{Role: "user", Parts: []*v1.ContentPart{
				{Type: "text", Text: "What is this?"},
				{Type: "image_url", ImageUrl: &v1.ImageURL{Url: "data:image/png;base64,AAAA", Detail: "high"}},
				{Type: "image_url", ImageUrl: &v1.ImageURL{Url: "data:image/jpeg;base64,BBBB"}},
				{Type: "image_url"},
				{Type: "text"},
			}}}},
		},
		{name: "content empty parts", body: `{"messages":[{"role":"user","content":[]}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{{Role: "user"}}}},
		{
			name: "flat tool",
			body: `{"tools":[{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{}}}]}`,
			want: &v1.ChatRequest{Tools: []*v1.Tool{{
				Name: "get_weather", Description: "Weather",
				ParametersJson: `{"type":"object","properties":{}}`,
			}}},
		},
		{
			name: "tools without parameters and with nulls",
			body: `{"tools":[{"type":"function","function":{"name":"a","parameters":null}},
				{"name":"b","parameters":null,"description":null},{"type":"function","function":null}]}`,
			want: &v1.ChatRequest{Tools: []*v1.Tool{
				{Type: "function", Function: &v1.FunctionDefinition{Name: "a"}},
				{Name: "b"},
				{Type: "function"},
			}},
		},
		{
			name: "both tool forms in one tool",
			body: `{"tools":[{"type":"function","name":"flat","function":{"name":"wrapped"}}]}`,
			want: &v1.ChatRequest{Tools: []*v1.Tool{{Type: "function", Name: "flat",
				Function: &v1.FunctionDefinition{Name: "wrapped"}}}},
		},
		{
			name: "tool_choice object",
			body: `{"tool_choice":{"type":"function","function":{"name":"save_policy"}}}`,
			want: &v1.ChatRequest{ToolChoice: mustValue(t, map[string]any{
				"type": "function", "function": map[string]any{"name": "save_policy"},
			})},
		},
		{name: "tool_choice string", body: `{"tool_choice":"required"}`,
			want: &v1.ChatRequest{ToolChoice: structpb.NewStringValue("required")}},
		{name: "tool_choice null", body: `{"tool_choice":null}`, want: &v1.ChatRequest{}},
		{name: "stop string", body: `{"stop":"END"}`, want: &v1.ChatRequest{Stop: []string{"END"}}},
		{name: "stop list", body: `{"stop":["a","b"]}`, want: &v1.ChatRequest{Stop: []string{"a", "b"}}},
		{name: "stop empty list", body: `{"stop":[]}`, want: &v1.ChatRequest{}},
		{name: "stop null", body: `{"stop":null}`, want: &v1.ChatRequest{}},
		{name: "stop empty string kept", body: `{"stop":""}`, want: &v1.ChatRequest{Stop: []string{""}}},
		{
			name: "scalars null are absent",
			body: `{"model":null,"messages":null,"tools":null,"stream":null,"max_tokens":null,"temperature":null,"top_p":null}`,
			want: &v1.ChatRequest{},
		},
		{name: "zero values are present", body: `{"max_tokens":0,"temperature":0,"top_p":0}`,
			want: &v1.ChatRequest{MaxTokens: proto.Int32(0), Temperature: proto.Float64(0), TopP: proto.Float64(0)}},
		{name: "max_tokens whole float", body: `{"max_tokens":1024.0}`, want: &v1.ChatRequest{MaxTokens: proto.Int32(1024)}},
		{name: "max_tokens exponent", body: `{"max_tokens":1e3}`, want: &v1.ChatRequest{MaxTokens: proto.Int32(1000)}},
		{name: "max_tokens int32 max", body: `{"max_tokens":2147483647}`, want: &v1.ChatRequest{MaxTokens: proto.Int32(2147483647)}},
		{name: "max_tokens negative is the translator's", body: `{"max_tokens":-1}`, want: &v1.ChatRequest{MaxTokens: proto.Int32(-1)}},
		{name: "temperature exponent", body: `{"temperature":2.5E-1}`, want: &v1.ChatRequest{Temperature: proto.Float64(0.25)}},
		{
			name: "arguments object kept verbatim",
			body: `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f",
				"arguments": {"n": 12345678901234567890, "f": 1.50, "e": 1E+2, "s": "x\u00e9", "nested": {"a": [1, 2]}} }}]}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{{Role: "assistant", ToolCalls: []*v1.ToolCall{{
				Id: "c", Type: "function", Function: &v1.FunctionCall{Name: "f",
					Arguments: `{"n": 12345678901234567890, "f": 1.50, "e": 1E+2, "s": "x\u00e9", "nested": {"a": [1, 2]}}`},
			}}}}},
		},
		{
			name: "arguments string verbatim and null",
			body: `{"messages":[{"role":"assistant","tool_calls":[
				{"id":"a","function":{"name":"f","arguments":"{\"n\": 1.50}"}},
				{"id":"b","function":{"name":"g","arguments":null}},
				{"id":"c","function":{"name":"h","arguments":"not json"}},
				{"id":"d","function":null}]}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{{Role: "assistant", ToolCalls: []*v1.ToolCall{
				{Id: "a", Function: &v1.FunctionCall{Name: "f", Arguments: `{"n": 1.50}`}},
				{Id: "b", Function: &v1.FunctionCall{Name: "g"}},
				{Id: "c", Function: &v1.FunctionCall{Name: "h", Arguments: "not json"}},
				{Id: "d"},
			}}}},
		},
		{
			name: "tool message with name",
			body: `{"messages":[{"role":"tool","tool_call_id":"call_9","name":"save_policy","content":"ok"}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{{Role: "tool", ToolCallId: "call_9", Name: "save_policy", Content: "ok"}}},
		},
		{
			name: "unknown fields ignored at every level",
			body: `{"x":{"deep":[1,{"a":null}]},"model":"m","user":"u","n":1,"seed":null,"response_format":{"type":"json"},
				"provider":"other","chunked":true,"client_type":"cli",
				"messages":[{"role":"user","x":[true,false],"content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}},
					{"type":"image_url","image_url":{"url":"u","x":1}}]},
					{"role":"assistant","refusal":null,"reasoning_content":"...","tool_calls":[{"id":"c","index":0,"type":"function",
						"function":{"name":"f","arguments":"{}","x":"y"}}]}],
				"tools":[{"type":"function","strict":true,"function":{"name":"f","strict":false,"parameters":{"type":"object"}}},
					{"name":"g","x":{},"parameters":{"type":"object"}}],
				"stream_options":{"include_usage":true}}`,
			want: &v1.ChatRequest{
				Model: "m",
				Messages: []*v1.Message{
					{Role: "user", Parts: []*v1.ContentPart{
						{Type: "text", Text: "hi"},
						{Type: "image_url", ImageUrl: &v1.ImageURL{Url: "u"}},
					}},
					{Role: "assistant", ToolCalls: []*v1.ToolCall{{Id: "c", Type: "function",
						Function: &v1.FunctionCall{Name: "f", Arguments: "{}"}}}},
				},
				Tools: []*v1.Tool{
					{Type: "function", Function: &v1.FunctionDefinition{Name: "f", ParametersJson: `{"type":"object"}`}},
					{Name: "g", ParametersJson: `{"type":"object"}`},
				},
			},
		},
		{name: "repeated key keeps the last", body: `{"model":"a","model":"b","messages":[{"role":"user"}],"messages":[]}`,
			want: &v1.ChatRequest{Model: "b"}},
		{
			name: "string escapes and UTF-8",
			body: `{"messages":[{"role":"user","content":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00 日本語 😀 <&>"}]}`,
			want: &v1.ChatRequest{Messages: []*v1.Message{user("\"\\/\b\f\n\r\té😀 日本語 😀 <&>")}},
		},
		{name: "lone surrogates become U+FFFD", body: `{"model":"a\ud800b\udc00c\ud800\u0041"}`,
			want: &v1.ChatRequest{Model: "a\uFFFDb\uFFFDc\uFFFDA"}},
		{name: "invalid UTF-8 becomes U+FFFD per byte", body: "{\"model\":\"a\xff\xfeb\",\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\"}]}",
			want: &v1.ChatRequest{Model: "a\uFFFD\uFFFDb", Messages: []*v1.Message{user("\uFFFD")}}},
		{
			name: "invalid UTF-8 in arguments object",
			body: "{\"messages\":[{\"tool_calls\":[{\"function\":{\"arguments\":{\"a\":\"\xff\"}}}]}]}",
			want: &v1.ChatRequest{Messages: []*v1.Message{{ToolCalls: []*v1.ToolCall{{
				Function: &v1.FunctionCall{Arguments: "{\"a\":\"\uFFFD\"}"}}}}}},
		},
		{name: "escaped keys match", body: `{"mod\u0065l":"m"}`, want: &v1.ChatRequest{Model: "m"}},
		{
			name: "parameters of every JSON type",
			body: `{"tools":[{"name":"t","parameters":{"s":"x","n":-1.5e2,"b":true,"f":false,"z":null,"l":[1,"a",[],{}],"o":{"k":{}}}}]}`,
			want: &v1.ChatRequest{Tools: []*v1.Tool{{Name: "t",
				ParametersJson: `{"s":"x","n":-1.5e2,"b":true,"f":false,"z":null,"l":[1,"a",[],{}],"o":{"k":{}}}`}}},
		},
		{
			// The reason parameters_json exists: structpb would sort the keys and round
			// 12345678901234567890 to 12345678901234567000.
			name: "parameters keep key order, numbers and escapes, whitespace removed",
			body: "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\": {\n  \"properties\" : {\"zeta\": {\"type\": \"integer\", \"maximum\": 12345678901234567890},\n\t\"alpha\": {\"type\": \"number\", \"multipleOf\": 0.1, \"minimum\": 1E+2, \"default\": -0.0}},\r\n  \"required\": [ \"zeta\" ], \"description\": \"a  b\\n<&> \\u00e9 \\\" \\\\\", \"type\": \"object\" }}}]}",
			want: &v1.ChatRequest{Tools: []*v1.Tool{{Type: "function", Function: &v1.FunctionDefinition{Name: "f",
				ParametersJson: `{"properties":{"zeta":{"type":"integer","maximum":12345678901234567890},"alpha":{"type":"number","multipleOf":0.1,"minimum":1E+2,"default":-0.0}},"required":["zeta"],"description":"a  b\n<&> \u00e9 \" \\","type":"object"}`}}}},
		},
		{
			name: "parameters numbers beyond float64 are text",
			body: `{"tools":[{"function":{"parameters":{"properties":{"x":{"maximum":1e999}}}}},{"parameters":{"enum":[1,-1e400]}}]}`,
			want: &v1.ChatRequest{Tools: []*v1.Tool{
				{Function: &v1.FunctionDefinition{ParametersJson: `{"properties":{"x":{"maximum":1e999}}}`}},
				{ParametersJson: `{"enum":[1,-1e400]}`},
			}},
		},
		{
			name: "parameters invalid UTF-8 becomes U+FFFD",
			body: "{\"tools\":[{\"parameters\":{\"description\": \"a\xffb\"}}]}",
			want: &v1.ChatRequest{Tools: []*v1.Tool{{ParametersJson: "{\"description\":\"a\uFFFDb\"}"}}},
		},
		{
			name: "parameters repeated keep the last",
			body: `{"tools":[{"name":"a","parameters":{"type":"object"},"parameters":{ }},{"name":"b","parameters":{"type":"object"},"parameters":null}]}`,
			want: &v1.ChatRequest{Tools: []*v1.Tool{{Name: "a", ParametersJson: `{}`}, {Name: "b"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeChatRequest([]byte(tt.body))
			require.NoError(t, err)
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("DecodeChatRequest() mismatch (-want +got):\n%s", diff)
			}
			// Every decoded request must be marshalable (proto3 strings are valid UTF-8).
			_, err = proto.Marshal(got)
			require.NoError(t, err)
		})
	}
}

func TestDecodeChatRequestErrors(t *testing.T) {
	t.Parallel()
	deep := `{"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`
	tests := []struct {
		name, body, want string
	}{
		// Not JSON.
		{"empty", ``, "body is empty"},
		{"blank", " \n\t", "body is empty"},
		{"truncated", `{"model":"m"`, "body is not valid JSON: unexpected end of input at byte 12"},
		{"truncated in string", `{"model":"m`, "body is not valid JSON: unexpected end of input at byte 11"},
		{"truncated literal", `{"stream":tru`, "body is not valid JSON: unexpected end of input at byte 13"},
		{"bad literal", `{"stream":trUe}`, "body is not valid JSON: invalid character 'U' in literal true at byte 12"},
		{"trailing garbage", `{"model":"m"} x`, "body is not valid JSON: invalid character 'x' after top-level value at byte 14"},
		{"two objects", `{}{}`, "body is not valid JSON: invalid character '{' after top-level value at byte 2"},
		{"trailing comma", `{"model":"m",}`, "body is not valid JSON: invalid character '}' looking for beginning of object key string at byte 13"},
		{"missing colon", `{"model" "m"}`, "body is not valid JSON: invalid character '\"' after object key (want ':') at byte 9"},
		{"missing comma", `{"stop":["a" "b"]}`, "body is not valid JSON: invalid character '\"' after array element (want ',' or ']') at byte 13"},
		{"missing comma in object", `{"a":1 "b":2}`, "body is not valid JSON: invalid character '\"' after object member (want ',' or '}') at byte 7"},
		{"single quotes", `{'model':'m'}`, `body is not valid JSON: invalid character '\'' looking for beginning of object key string at byte 1`},
		{"bare word", `hello`, "body is not valid JSON: invalid character 'h' looking for beginning of value at byte 0"},
		{"bad escape", `{"model":"a\x"}`, "body is not valid JSON: invalid character 'x' in string escape code at byte 12"},
		{"bad unicode escape", `{"model":"\u12G4"}`, "body is not valid JSON: invalid character 'G' in \\u escape at byte 14"},
		{"control character", "{\"model\":\"a\nb\"}", "body is not valid JSON: invalid character 0x0a in string literal at byte 11"},
		{"leading zero", `{"max_tokens":01}`, "body is not valid JSON: invalid character '1' after object member (want ',' or '}') at byte 15"},
		{"bad fraction", `{"top_p":1.}`, "body is not valid JSON: invalid character '}' after decimal point in numeric literal at byte 11"},
		{"bad exponent", `{"top_p":1e}`, "body is not valid JSON: invalid character '}' in exponent of numeric literal at byte 11"},
		{"lone minus", `{"top_p":-}`, "body is not valid JSON: invalid character '}' in numeric literal at byte 10"},
		{"too deep", deep, "body nests deeper than 1000 levels at byte 1004"},
		{"syntax wins over shape", `{"max_tokens":"x","stop":[1,}`, "body is not valid JSON: invalid character '}' looking for beginning of value at byte 28"},
		{"syntax in skipped field", `{"x":[1,2,,3]}`, "body is not valid JSON: invalid character ',' looking for beginning of value at byte 10"},
		{"BOM", "\xef\xbb\xbf{}", "body is not valid JSON: invalid character 0xef looking for beginning of value at byte 0"},

		// JSON of the wrong shape.
		{"array body", `[]`, "body must be a JSON object, got array"},
		{"null body", `null`, "body must be a JSON object, got null"},
		{"string body", `"hi"`, "body must be a JSON object, got string"},
		{"model number", `{"model":1}`, "model: want a string, got number"},
		{"messages string", `{"messages":"hi"}`, "messages: want an array, got string"},
		{"messages object", `{"messages":{}}`, "messages: want an array, got object"},
		{"message null", `{"messages":[{"role":"user"},null]}`, "messages[1]: want an object, got null"},
		{"message string", `{"messages":["hi"]}`, "messages[0]: want an object, got string"},
		{"role number", `{"messages":[{},{},{"role":1}]}`, "messages[2].role: want a string, got number"},
		{"role object", `{"messages":[{"role":{}}]}`, "messages[0].role: want a string, got object"},
		{"content number", `{"messages":[{"role":"user","content":42}]}`, "messages[0].content: want a string, null or an array of parts, got number"},
		{"content object", `{"messages":[{"role":"user","content":{"text":"hi"}}]}`, "messages[0].content: want a string, null or an array of parts, got object"},
		{"content bool", `{"messages":[{"content":true}]}`, "messages[0].content: want a string, null or an array of parts, got boolean"},
		{"part string", `{"messages":[{"content":[{"type":"text","text":"a"},"b"]}]}`, "messages[0].content[1]: want an object, got string"},
		{"part type", `{"messages":[{"content":[{"type":1}]}]}`, "messages[0].content[0].type: want a string, got number"},
		{"part text", `{"messages":[{"content":[{"type":"text","text":["a"]}]}]}`, "messages[0].content[0].text: want a string, got array"},
		{"image_url number", `{"messages":[{"content":[{"type":"image_url","image_url":7}]}]}`, "messages[0].content[0].image_url: want an object or a string, got number"},
		{"image_url.url", `{"messages":[{"content":[{"image_url":{"url":false}}]}]}`, "messages[0].content[0].image_url.url: want a string, got boolean"},
		{"image_url.detail", `{"messages":[{"content":[{"image_url":{"detail":1}}]}]}`, "messages[0].content[0].image_url.detail: want a string, got number"},
		{"tool_calls object", `{"messages":[{"role":"assistant"},{"role":"assistant","tool_calls":{}}]}`, "messages[1].tool_calls: want an array, got object"},
		{"tool_call string", `{"messages":[{"tool_calls":["x"]}]}`, "messages[0].tool_calls[0]: want an object, got string"},
		{"tool_call id", `{"messages":[{"tool_calls":[{"id":1}]}]}`, "messages[0].tool_calls[0].id: want a string, got number"},
		{"tool_call type", `{"messages":[{"tool_calls":[{"type":{}}]}]}`, "messages[0].tool_calls[0].type: want a string, got object"},
		{"tool_call function", `{"messages":[{"tool_calls":[{"function":"f"}]}]}`, "messages[0].tool_calls[0].function: want an object, got string"},
		{"tool_call name", `{"messages":[{"tool_calls":[{},{"function":{"name":2}}]}]}`, "messages[0].tool_calls[1].function.name: want a string, got number"},
		{"arguments array", `{"messages":[{"tool_calls":[{"function":{"arguments":[1]}}]}]}`, "messages[0].tool_calls[0].function.arguments: want a string or an object, got array"},
		{"arguments number", `{"messages":[{"tool_calls":[{"function":{"arguments":1}}]}]}`, "messages[0].tool_calls[0].function.arguments: want a string or an object, got number"},
		{"tool_call_id", `{"messages":[{"tool_call_id":5}]}`, "messages[0].tool_call_id: want a string, got number"},
		{"name", `{"messages":[{"name":true}]}`, "messages[0].name: want a string, got boolean"},
		{"tools object", `{"tools":{"name":"f"}}`, "tools: want an array, got object"},
		{"tool string", `{"tools":["f"]}`, "tools[0]: want an object, got string"},
		{"tool null", `{"tools":[null]}`, "tools[0]: want an object, got null"},
		{"tool type", `{"tools":[{"type":1}]}`, "tools[0].type: want a string, got number"},
		{"tool function string", `{"tools":[{"function":"f"}]}`, "tools[0].function: want an object, got string"},
		{"tool function name", `{"tools":[{"function":{"name":1}}]}`, "tools[0].function.name: want a string, got number"},
		{"tool function description", `{"tools":[{"function":{"description":1}}]}`, "tools[0].function.description: want a string, got number"},
		{"wrapped parameters array", `{"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, "tools[0].function.parameters: want an object, got array"},
		{"wrapped parameters string", `{"tools":[{"function":{"parameters":"{}"}}]}`, "tools[0].function.parameters: want an object, got string"},
		{"flat parameters", `{"tools":[{"name":"a"},{"name":"b","parameters":true}]}`, "tools[1].parameters: want an object, got boolean"},
		{"flat name", `{"tools":[{"name":1}]}`, "tools[0].name: want a string, got number"},
		{"flat description", `{"tools":[{"description":[]}]}`, "tools[0].description: want a string, got array"},
		{"parameters number", `{"tools":[{"parameters":1}]}`, "tools[0].parameters: want an object, got number"},
		{"parameters syntax", `{"tools":[{"parameters":{"type":"object","properties":{"a":}}}]}`,
			"body is not valid JSON: invalid character '}' looking for beginning of value at byte 59"},
		{"parameters too deep", `{"tools":[{"parameters":` + strings.Repeat(`{"a":`, 1000) + `1` + strings.Repeat("}", 1000) + `}]}`,
			"body nests deeper than 1000 levels at byte 5009"},
		{"tool_choice number out of range", `{"tool_choice":{"type":"function","x":[1e999]}}`, "tool_choice.x[0]: number 1e999 is out of range"},
		{"tool_choice number", `{"tool_choice":1}`, "tool_choice: want a string or an object, got number"},
		{"tool_choice array", `{"tool_choice":["auto"]}`, "tool_choice: want a string or an object, got array"},
		{"tool_choice bool", `{"tool_choice":true}`, "tool_choice: want a string or an object, got boolean"},
		{"stream string", `{"stream":"true"}`, "stream: want a boolean, got string"},
		{"stream number", `{"stream":1}`, "stream: want a boolean, got number"},
		{"max_tokens fraction", `{"max_tokens":1.5}`, "max_tokens: want an integer, got 1.5"},
		{"max_tokens string", `{"max_tokens":"1024"}`, "max_tokens: want an integer, got string"},
		{"max_tokens too big", `{"max_tokens":3000000000}`, "max_tokens: integer 3000000000 is out of range"},
		{"max_tokens too small", `{"max_tokens":-2147483649}`, "max_tokens: integer -2147483649 is out of range"},
		{"max_tokens huge", `{"max_tokens":1e999}`, "max_tokens: integer 1e999 is out of range"},
		{"temperature string", `{"temperature":"hot"}`, "temperature: want a number, got string"},
		{"temperature huge", `{"temperature":1e999}`, "temperature: number 1e999 is out of range"},
		{"top_p bool", `{"top_p":false}`, "top_p: want a number, got boolean"},
		{"stop number", `{"stop":5}`, "stop: want a string or an array of strings, got number"},
		{"stop object", `{"stop":{}}`, "stop: want a string or an array of strings, got object"},
		{"stop element", `{"stop":["a",1]}`, "stop[1]: want a string, got number"},
		{"stop null element", `{"stop":[null]}`, "stop[0]: want a string, got null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeChatRequest([]byte(tt.body))
			require.Error(t, err)
			require.Nil(t, got)
			require.ErrorIs(t, err, ErrInvalidJSON)
			require.Equal(t, "invalid request body: "+tt.want, err.Error())
		})
	}
}

func TestDecodeChatRequestRepeatable(t *testing.T) {
	t.Parallel()
	// Structs are maps: nothing about decoding may depend on their iteration order.
	first, err := DecodeChatRequest(agentTurnBody(t))
	require.NoError(t, err)
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(first)
	require.NoError(t, err)
	for range 20 {
		again, err := DecodeChatRequest(agentTurnBody(t))
		require.NoError(t, err)
		got, err := proto.MarshalOptions{Deterministic: true}.Marshal(again)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

func TestDecodeChatRequestDoesNotAliasBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hello","tool_calls":[{"function":{"arguments":{"a":1}}}]}]}`)
	req, err := DecodeChatRequest(body)
	require.NoError(t, err)
	for i := range body {
		body[i] = 'X'
	}
	require.Equal(t, "m", req.GetModel())
	require.Equal(t, "hello", req.GetMessages()[0].GetContent())
	require.Equal(t, `{"a":1}`, req.GetMessages()[0].GetToolCalls()[0].GetFunction().GetArguments())

	// The server reads bodies into pooled buffers and reuses them once decoded: neither a
	// whole agent turn (tools, schemas, structs) nor an error may keep a byte of the body.
	body = agentTurnBody(t)
	req, err = DecodeChatRequest(body)
	require.NoError(t, err)
	want := proto.Clone(req)
	for i := range body {
		body[i] = 'X'
	}
	require.True(t, proto.Equal(want, req), "the request changed with the body")
	for _, bad := range []string{`{"tools":[{"function":{"name":1}}]}`, `{"messages":[{"role":"user","content":"a\x"}]}`, `{"unknown_field":[1,}`} {
		body := []byte(bad)
		_, err := DecodeChatRequest(body)
		require.Error(t, err)
		msg := err.Error()
		for i := range body {
			body[i] = 'X'
		}
		require.Equal(t, msg, err.Error(), "the error changed with the body")
	}
}

func TestErrInvalidJSONIsSentinel(t *testing.T) {
	t.Parallel()
	_, err := DecodeChatRequest([]byte(`{"model":1}`))
	require.True(t, errors.Is(err, ErrInvalidJSON))
	require.False(t, errors.Is(err, errors.New("invalid request body")))
}

func FuzzDecodeChatRequest(f *testing.F) {
	for _, seed := range []string{
		protocolExample,
		string(agentTurnBody(f)),
		``,
		`{}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":"u"}]}]}`,
		`{"tools":[{"name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"messages":[{"tool_calls":[{"function":{"arguments":{"n":12345678901234567890}}}]}],"stop":"x"}`,
		`{"model":"\ud83d\ude00\ud800","max_tokens":1e3,"temperature":-0.0e-0}`,
		`{"x":[[[[{"y":null}]]]]}`,
		`{"stop":["a",1]}`,
		"{\"tools\":[{\"function\":{\"parameters\": { \"d\" : \"a \\\" } \\\\\" ,\n\t\"n\":[ 12345678901234567890 , 0.1 ] }}},{\"parameters\":null}]}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeChatRequest(body)
		if err != nil {
			require.Nil(t, req)
			require.ErrorIs(t, err, ErrInvalidJSON)
			msg := err.Error()
			require.Greater(t, len(msg), len("invalid request body: "), "error has no detail")
			switch {
			case strings.Contains(msg, "nests deeper"):
				// Our own limit; the body may or may not be JSON.
			case strings.Contains(msg, "not valid JSON") || strings.Contains(msg, "body is empty"):
				// Our judgment of syntax agrees with encoding/json's.
				require.False(t, jsonValid(body), "rejected valid JSON as malformed: %s", msg)
			default:
				require.True(t, jsonValid(body), "blamed a field in malformed JSON: %s", msg)
			}
			return
		}
		require.NotNil(t, req)
		require.True(t, jsonValid(body), "accepted malformed JSON")
		// Every string is valid UTF-8, so the request can go over gRPC.
		_, err = proto.Marshal(req)
		require.NoError(t, err)
		// Tool parameters are compact JSON object text, never a Struct.
		for i, tool := range req.GetTools() {
			for _, params := range []string{tool.GetParametersJson(), tool.GetFunction().GetParametersJson()} {
				if params == "" {
					continue
				}
				require.True(t, strings.HasPrefix(params, "{") && jsonValid([]byte(params)), "tools[%d]: %q", i, params)
				var compact bytes.Buffer
				require.NoError(t, json.Compact(&compact, []byte(params)))
				require.Equal(t, compact.String(), params, "tools[%d] not compact", i)
			}
			require.Nil(t, tool.GetParameters(), "tools[%d]", i)
			require.Nil(t, tool.GetFunction().GetParameters(), "tools[%d]", i)
		}
	})
}
