package nirmata

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

func ptr[T any](v T) *T { return &v }

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

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	schema := []byte(`{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}`)
	user := func(s string) chat.Message { return chat.Message{Role: "user", Content: s} }

	tests := []struct {
		name   string
		body   string
		want   *chat.Request
		stream bool
	}{
		{
			name: "protocol example",
			body: protocolExample,
			want: &chat.Request{
				Model: "us.anthropic.claude-sonnet-4-20250514-v1:0",
				Messages: []chat.Message{
					{Role: "system", Content: "You are a policy assistant."},
					{Role: "user", Content: "Require pod labels."},
					{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function", Name: "save_policy", Arguments: `{"filename":"p.yaml"}`}}},
					{Role: "tool", ToolCallID: "call_1", Content: `{"saved":true}`},
				},
				Tools:       []chat.Tool{{Type: "function", Name: "save_policy", Description: "Save a policy", Parameters: schema, Wrapped: true}},
				ToolChoice:  chat.ToolChoice{Mode: chat.ChoiceAuto},
				MaxTokens:   ptr[int32](1024),
				Temperature: ptr(0.2),
				TopP:        ptr(0.9),
				Stop:        []string{"END"},
			},
		},
		{name: "empty object", body: `{}`, want: &chat.Request{}},
		{name: "whitespace everywhere", body: " \t\r\n{ \"model\" : \"m\" , \"stream\" :true }\n ",
			want: &chat.Request{Model: "m"}, stream: true},
		{name: "stream true", body: `{"stream":true}`, want: &chat.Request{}, stream: true},
		{name: "content null", body: `{"messages":[{"role":"assistant","content":null}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "assistant"}}}},
		{name: "content absent", body: `{"messages":[{"role":"assistant"}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "assistant"}}}},
		{
			name: "content parts",
			body: `{"messages":[{"role":"user","content":[
				{"type":"text","text":"What is this?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"high"}},
				{"type":"image_url","image_url":"data:image/jpeg;base64,BBBB"},
				{"type":"image_url","image_url":null},
				{"type":"text","text":null}
			]}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "user", Parts: []chat.Part{
				{Type: "text", Text: "What is this?"},
				{Type: "image_url", Image: &chat.ImageURL{URL: "data:image/png;base64,AAAA", Detail: "high"}},
				{Type: "image_url", Image: &chat.ImageURL{URL: "data:image/jpeg;base64,BBBB"}},
				{Type: "image_url"},
				{Type: "text"},
			}}}},
		},
		{
			name: "file, refusal and audio parts",
			body: `{"messages":[{"role":"user","content":[
				{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}},
				{"type":"file","file":{"file_id":"file-1"},"file":{"filename":"b.pdf"}},
				{"type":"file","file":null},
				{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}
			]},{"role":"assistant","content":[{"type":"refusal","refusal":"I can't.","text":"ignored"}]}]}`,
			want: &chat.Request{Messages: []chat.Message{
				{Role: "user", Parts: []chat.Part{
					{Type: "file", File: &chat.File{Data: "data:application/pdf;base64,JVBERi0=", Filename: "a.pdf"}},
					{Type: "file", File: &chat.File{Filename: "b.pdf"}}, // a repeated member keeps its last value whole
					{Type: "file"},
					{Type: "input_audio"},
				}},
				{Role: "assistant", Parts: []chat.Part{{Type: "refusal", Text: "I can't."}}},
			}},
		},
		{name: "content empty parts", body: `{"messages":[{"role":"user","content":[]}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "user"}}}},
		{
			name: "flat tool",
			body: `{"tools":[{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{}}}]}`,
			want: &chat.Request{Tools: []chat.Tool{{Name: "get_weather", Description: "Weather", Parameters: []byte(`{"type":"object","properties":{}}`)}}},
		},
		{
			name: "tools without parameters and with nulls",
			body: `{"tools":[{"type":"function","function":{"name":"a","parameters":null}},
				{"name":"b","parameters":null,"description":null},{"type":"function","function":null}]}`,
			want: &chat.Request{Tools: []chat.Tool{
				{Type: "function", Name: "a", Wrapped: true},
				{Name: "b"},
				{Type: "function"},
			}},
		},
		{
			name: "both tool forms in one tool: the wrapped one wins",
			body: `{"tools":[{"type":"function","name":"flat","function":{"name":"wrapped"}}]}`,
			want: &chat.Request{Tools: []chat.Tool{{Type: "function", Name: "wrapped", Wrapped: true}}},
		},
		{name: "tool_choice function object", body: `{"tool_choice":{"type":"function","function":{"name":"save_policy"}}}`,
			want: &chat.Request{ToolChoice: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "save_policy"}}},
		{name: "tool_choice function flat name", body: `{"tool_choice":{"type":"function","name":"f"}}`,
			want: &chat.Request{ToolChoice: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "f"}}},
		{name: "tool_choice function without type", body: `{"tool_choice":{"function":{"name":"f"}}}`,
			want: &chat.Request{ToolChoice: chat.ToolChoice{Mode: chat.ChoiceFunction, Function: "f"}}},
		{name: "tool_choice type object", body: `{"tool_choice":{"type":"any"}}`,
			want: &chat.Request{ToolChoice: chat.ToolChoice{Mode: chat.ChoiceRequired}}},
		{name: "tool_choice string", body: `{"tool_choice":"required"}`,
			want: &chat.Request{ToolChoice: chat.ToolChoice{Mode: chat.ChoiceRequired}}},
		{name: "tool_choice any", body: `{"tool_choice":"any"}`,
			want: &chat.Request{ToolChoice: chat.ToolChoice{Mode: chat.ChoiceRequired}}},
		{name: "tool_choice none", body: `{"tool_choice":"none"}`,
			want: &chat.Request{ToolChoice: chat.ToolChoice{Mode: chat.ChoiceNone}}},
		{name: "tool_choice empty string", body: `{"tool_choice":""}`, want: &chat.Request{}},
		{name: "tool_choice null", body: `{"tool_choice":null}`, want: &chat.Request{}},
		{name: "stop string", body: `{"stop":"END"}`, want: &chat.Request{Stop: []string{"END"}}},
		{name: "stop list", body: `{"stop":["a","b"]}`, want: &chat.Request{Stop: []string{"a", "b"}}},
		{name: "stop empty list", body: `{"stop":[]}`, want: &chat.Request{Stop: []string{}}},
		{name: "stop null", body: `{"stop":null}`, want: &chat.Request{Stop: []string{}}},
		{name: "stop empty string kept", body: `{"stop":""}`, want: &chat.Request{Stop: []string{""}}},
		{
			name: "scalars null are absent",
			body: `{"model":null,"messages":null,"tools":null,"stream":null,"max_tokens":null,"temperature":null,"top_p":null}`,
			want: &chat.Request{},
		},
		{name: "zero values are present", body: `{"max_tokens":0,"temperature":0,"top_p":0}`,
			want: &chat.Request{MaxTokens: ptr[int32](0), Temperature: ptr(0.0), TopP: ptr(0.0)}},
		{name: "max_tokens whole float", body: `{"max_tokens":1024.0}`, want: &chat.Request{MaxTokens: ptr[int32](1024)}},
		{name: "max_tokens exponent", body: `{"max_tokens":1e3}`, want: &chat.Request{MaxTokens: ptr[int32](1000)}},
		{name: "max_tokens int32 max", body: `{"max_tokens":2147483647}`, want: &chat.Request{MaxTokens: ptr[int32](2147483647)}},
		{name: "max_tokens negative is the translator's", body: `{"max_tokens":-1}`, want: &chat.Request{MaxTokens: ptr[int32](-1)}},
		{name: "temperature exponent", body: `{"temperature":2.5E-1}`, want: &chat.Request{Temperature: ptr(0.25)}},
		{
			name: "arguments object kept verbatim",
			body: `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f",
				"arguments": {"n": 12345678901234567890, "f": 1.50, "e": 1E+2, "s": "x\u00e9", "nested": {"a": [1, 2]}} }}]}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "assistant", ToolCalls: []chat.ToolCall{{
				ID: "c", Type: "function", Name: "f",
				Arguments: `{"n": 12345678901234567890, "f": 1.50, "e": 1E+2, "s": "x\u00e9", "nested": {"a": [1, 2]}}`,
			}}}}},
		},
		{
			name: "arguments string verbatim and null",
			body: `{"messages":[{"role":"assistant","tool_calls":[
				{"id":"a","function":{"name":"f","arguments":"{\"n\": 1.50}"}},
				{"id":"b","function":{"name":"g","arguments":null}},
				{"id":"c","function":{"name":"h","arguments":"not json"}},
				{"id":"d","function":null}]}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "assistant", ToolCalls: []chat.ToolCall{
				{ID: "a", Name: "f", Arguments: `{"n": 1.50}`},
				{ID: "b", Name: "g"},
				{ID: "c", Name: "h", Arguments: "not json"},
				{ID: "d"},
			}}}},
		},
		{
			name: "tool message with name",
			body: `{"messages":[{"role":"tool","tool_call_id":"call_9","name":"save_policy","content":"ok"}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "tool", ToolCallID: "call_9", Name: "save_policy", Content: "ok"}}},
		},
		{
			name: "cache_control on parts, messages and both forms of tools; prompt_cache_retention",
			body: `{"prompt_cache_retention":"24h","messages":[
				{"role":"system","content":"s","cache_control":{"type":"ephemeral","ttl":"1h"}},
				{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":null}],
				 "cache_control":{"ttl":"5m","type":"ephemeral","x":1}}],
				"tools":[{"type":"function","function":{"name":"f","cache_control":{"type":"ephemeral","ttl":"1h"}},"cache_control":{"type":"ephemeral"}},
					{"type":"function","function":{"name":"g"},"cache_control":{"type":"other"}},
					{"name":"h","cache_control":{"type":"ephemeral"}}]}`,
			want: &chat.Request{
				CacheRetention: "24h",
				Messages: []chat.Message{
					{Role: "system", Content: "s", CacheControl: &chat.CacheControl{Type: "ephemeral", TTL: "1h"}},
					{Role: "user", Parts: []chat.Part{
						{Type: "text", Text: "a", CacheControl: &chat.CacheControl{Type: "ephemeral"}},
						{Type: "text", Text: "b"},
					}, CacheControl: &chat.CacheControl{Type: "ephemeral", TTL: "5m"}},
				},
				Tools: []chat.Tool{
					{Type: "function", Name: "f", Wrapped: true, CacheControl: &chat.CacheControl{Type: "ephemeral", TTL: "1h"}, CacheControlInFunction: true},
					{Type: "function", Name: "g", Wrapped: true, CacheControl: &chat.CacheControl{Type: "other"}},
					{Name: "h", CacheControl: &chat.CacheControl{Type: "ephemeral"}},
				},
			},
		},
		{
			name: "a repeated cache_control keeps its last value whole",
			body: `{"messages":[{"role":"user","content":"a","cache_control":{"type":"ephemeral","ttl":"1h"},"cache_control":{"type":"ephemeral"}}]}`,
			want: &chat.Request{Messages: []chat.Message{{Role: "user", Content: "a", CacheControl: &chat.CacheControl{Type: "ephemeral"}}}},
		},
		{
			// The schema keeps its text as a tool's parameters do; the translator checks it.
			name: "response_format json_schema",
			body: `{"response_format":{"type":"json_schema","json_schema":{"name":"weather","description":"Now","strict":true,
				"schema":{"type": "object", "properties": {"t": {"type": "number", "maximum": 12345678901234567890}}},"x":1}}}`,
			want: &chat.Request{ResponseFormat: &chat.ResponseFormat{Type: "json_schema", Name: "weather", Description: "Now", Strict: true,
				Schema: []byte(`{"type":"object","properties":{"t":{"type":"number","maximum":12345678901234567890}}}`)}},
		},
		{
			name: "response_format json_object, and null json_schema members",
			body: `{"response_format":{"type":"json_object","json_schema":{"schema":null,"strict":null}}}`,
			want: &chat.Request{ResponseFormat: &chat.ResponseFormat{Type: "json_object"}},
		},
		{
			name: "response_format null is absent",
			body: `{"response_format":null}`,
			want: &chat.Request{},
		},
		{
			name: "unknown fields ignored at every level",
			body: `{"x":{"deep":[1,{"a":null}]},"model":"m","user":"u","n":1,"seed":null,"logit_bias":{"1":2},
				"provider":"other","chunked":true,"client_type":"cli",
				"messages":[{"role":"user","x":[true,false],"content":[{"type":"text","text":"hi","annotations":[{"type":"url"}]},
					{"type":"image_url","image_url":{"url":"u","x":1}}]},
					{"role":"assistant","refusal":null,"reasoning_content":"...","tool_calls":[{"id":"c","index":0,"type":"function",
						"function":{"name":"f","arguments":"{}","x":"y"}}]}],
				"tools":[{"type":"function","strict":true,"function":{"name":"f","strict":false,"parameters":{"type":"object"}}},
					{"name":"g","x":{},"parameters":{"type":"object"}}],
				"stream_options":{"include_usage":true}}`,
			want: &chat.Request{
				Model: "m",
				Messages: []chat.Message{
					{Role: "user", Parts: []chat.Part{
						{Type: "text", Text: "hi"},
						{Type: "image_url", Image: &chat.ImageURL{URL: "u"}},
					}},
					{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c", Type: "function", Name: "f", Arguments: "{}"}}},
				},
				Tools: []chat.Tool{
					{Type: "function", Name: "f", Parameters: []byte(`{"type":"object"}`), Wrapped: true},
					{Name: "g", Parameters: []byte(`{"type":"object"}`)},
				},
			},
		},
		{
			name: "strict tools and tool_validation (13.1, 13.2)",
			body: `{"tool_validation":"repair","tools":[{"type":"function","function":{"name":"f","strict":true}},{"name":"g","strict":true}]}`,
			want: &chat.Request{ToolValidation: "repair", Tools: []chat.Tool{
				{Type: "function", Name: "f", Wrapped: true, Strict: true},
				{Name: "g", Strict: true},
			}},
		},
		{name: "repeated key keeps the last", body: `{"model":"a","model":"b","messages":[{"role":"user"}],"messages":[]}`,
			want: &chat.Request{Model: "b"}},
		{
			name: "string escapes and UTF-8",
			body: `{"messages":[{"role":"user","content":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00 日本語 😀 <&>"}]}`,
			want: &chat.Request{Messages: []chat.Message{user("\"\\/\b\f\n\r\té😀 日本語 😀 <&>")}},
		},
		{name: "lone surrogates become U+FFFD", body: `{"model":"a\ud800b\udc00c\ud800\u0041"}`,
			want: &chat.Request{Model: "a\uFFFDb\uFFFDc\uFFFDA"}},
		{name: "invalid UTF-8 becomes U+FFFD", body: "{\"model\":\"a\xff\xfeb\",\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\"}]}",
			want: &chat.Request{Model: "a\uFFFD\uFFFDb", Messages: []chat.Message{user("\uFFFD")}}},
		{name: "escaped keys match", body: `{"mod\u0065l":"m"}`, want: &chat.Request{Model: "m"}},
		{name: "a repeated object keeps its last value whole",
			body: `{"tools":[{"function":{"name":"a","description":"d","parameters":{"x":1}},"function":{"name":"b"}}],
				"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"},"function":{"name":"g"}}]}]}`,
			want: &chat.Request{Tools: []chat.Tool{{Name: "b", Wrapped: true}},
				Messages: []chat.Message{{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c", Name: "g"}}}}}},
		{name: "invalid UTF-8 in objects kept as text becomes U+FFFD",
			body: "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":\"\xff\"}}}]}],\"tools\":[{\"name\":\"t\",\"parameters\":{\"d\":\"\xfe\"}}]}",
			want: &chat.Request{Messages: []chat.Message{{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c", Name: "f", Arguments: "{\"a\":\"\uFFFD\"}"}}}},
				Tools: []chat.Tool{{Name: "t", Parameters: []byte("{\"d\":\"\uFFFD\"}")}}}},
		{
			name: "parameters of every JSON type",
			body: `{"tools":[{"name":"t","parameters":{"s":"x","n":-1.5e2,"b":true,"f":false,"z":null,"l":[1,"a",[],{}],"o":{"k":{}}}}]}`,
			want: &chat.Request{Tools: []chat.Tool{{Name: "t",
				Parameters: []byte(`{"s":"x","n":-1.5e2,"b":true,"f":false,"z":null,"l":[1,"a",[],{}],"o":{"k":{}}}`)}}},
		},
		{
			// The schema reaches Bedrock as written: a decoded map would sort the keys and
			// round 12345678901234567890 to 12345678901234567000.
			name: "parameters keep key order, numbers and escapes, whitespace removed",
			body: "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\": {\n  \"properties\" : {\"zeta\": {\"type\": \"integer\", \"maximum\": 12345678901234567890},\n\t\"alpha\": {\"type\": \"number\", \"multipleOf\": 0.1, \"minimum\": 1E+2, \"default\": -0.0}},\r\n  \"required\": [ \"zeta\" ], \"description\": \"a  b\\n<&> \\u00e9 \\\" \\\\\", \"type\": \"object\" }}}]}",
			want: &chat.Request{Tools: []chat.Tool{{Type: "function", Name: "f", Wrapped: true,
				Parameters: []byte(`{"properties":{"zeta":{"type":"integer","maximum":12345678901234567890},"alpha":{"type":"number","multipleOf":0.1,"minimum":1E+2,"default":-0.0}},"required":["zeta"],"description":"a  b\n<&> \u00e9 \" \\","type":"object"}`)}}},
		},
		{
			name: "parameters numbers beyond float64 are text",
			body: `{"tools":[{"function":{"parameters":{"properties":{"x":{"maximum":1e999}}}}},{"parameters":{"enum":[1,-1e400]}}]}`,
			want: &chat.Request{Tools: []chat.Tool{
				{Parameters: []byte(`{"properties":{"x":{"maximum":1e999}}}`), Wrapped: true},
				{Parameters: []byte(`{"enum":[1,-1e400]}`)},
			}},
		},
		{
			name: "parameters repeated keep the last",
			body: `{"tools":[{"name":"a","parameters":{"type":"object"},"parameters":{ }},{"name":"b","parameters":{"type":"object"},"parameters":null}]}`,
			want: &chat.Request{Tools: []chat.Tool{{Name: "a", Parameters: []byte(`{}`)}, {Name: "b"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, stream, err := DecodeRequest([]byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, tt.stream, stream)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeRequest() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	t.Parallel()
	deep := `{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`
	tests := []struct {
		name, body, want string
	}{
		// Not JSON.
		{"empty", ``, "body is empty"},
		{"blank", " \n\t", "body is empty"},
		{"truncated", `{"model":"m"`, "body is not valid JSON: unexpected end of input at byte 12"},
		{"truncated in string", `{"model":"m`, "body is not valid JSON: unexpected end of input at byte 11"},
		{"truncated literal", `{"stream":tru`, "body is not valid JSON: unexpected end of input at byte 13"},
		{"bad literal", `{"stream":trUe}`, "body is not valid JSON: invalid character 'U' in literal true (expecting 'u') at byte 12"},
		{"trailing garbage", `{"model":"m"} x`, "body is not valid JSON: invalid character 'x' after top-level value at byte 14"},
		{"two objects", `{}{}`, "body is not valid JSON: invalid character '{' after top-level value at byte 2"},
		{"trailing comma", `{"model":"m",}`, "body is not valid JSON: invalid character ',' at start of value at byte 12"},
		{"missing colon", `{"model" "m"}`, "body is not valid JSON: invalid character '\"' after object name (expecting ':') at byte 9"},
		{"missing comma", `{"stop":["a" "b"]}`, "body is not valid JSON: invalid character '\"' after array value (expecting ',' or ']') at byte 13"},
		{"missing comma in object", `{"a":1 "b":2}`, "body is not valid JSON: invalid character '\"' after object value (expecting ',' or '}') at byte 7"},
		{"single quotes", `{'model':'m'}`, `body is not valid JSON: invalid character '\'' at start of value at byte 1`},
		{"bare word", `hello`, "body is not valid JSON: invalid character 'h' at start of value at byte 0"},
		{"bad escape", `{"model":"a\x"}`, "body is not valid JSON: invalid escape sequence `\\x` in string at byte 11"},
		{"bad unicode escape", `{"model":"\u12G4"}`, "body is not valid JSON: invalid escape sequence `\\u12G4` in string at byte 10"},
		{"control character", "{\"model\":\"a\nb\"}", "body is not valid JSON: invalid character '\\n' in string (expecting non-control character) at byte 11"},
		{"leading zero", `{"max_tokens":01}`, "body is not valid JSON: invalid character '1' after object value (expecting ',' or '}') at byte 15"},
		{"bad fraction", `{"top_p":1.}`, "body is not valid JSON: invalid character '}' in number (expecting digit) at byte 11"},
		{"bad exponent", `{"top_p":1e}`, "body is not valid JSON: invalid character '}' in number (expecting digit) at byte 11"},
		{"lone minus", `{"top_p":-}`, "body is not valid JSON: invalid character '}' in number (expecting digit) at byte 10"},
		{"too deep", deep, "body nests deeper than 10000 levels at byte 10004"},
		{"syntax wins over shape", `{"max_tokens":"x","stop":[1,}`, "body is not valid JSON: invalid character '}' at start of value at byte 28"},
		{"syntax wins over a bad tool_choice", `{"tool_choice":"bogus","messages":[`, "body is not valid JSON: unexpected end of input at byte 35"},
		{"syntax in skipped field", `{"x":[1,2,,3]}`, "body is not valid JSON: invalid character ',' at start of value at byte 10"},
		{"schema names a member twice", `{"tools":[{"function":{"name":"a","parameters":{"a":1,"a":2}}}]}`, `tools[0].function.parameters: not valid JSON: duplicate object member name at byte 7`},
		{"BOM", "\xef\xbb\xbf{}", "body is not valid JSON: invalid character '\\ufeff' at start of value at byte 0"},

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
		{"cache_control string", `{"messages":[{"role":"user","cache_control":"ephemeral"}]}`, "messages[0].cache_control: want an object, got string"},
		{"part cache_control ttl number", `{"messages":[{"content":[{"text":"a","cache_control":{"ttl":5}}]}]}`, "messages[0].content[0].cache_control.ttl: want a string, got number"},
		{"tool cache_control array", `{"tools":[{"function":{"name":"f","cache_control":[]}}]}`, "tools[0].function.cache_control: want an object, got array"},
		{"prompt_cache_retention number", `{"prompt_cache_retention":24}`, "prompt_cache_retention: want a string, got number"},
		{"content number", `{"messages":[{"role":"user","content":42}]}`, "messages[0].content: want a string, null or an array of parts, got number"},
		{"content object", `{"messages":[{"role":"user","content":{"text":"hi"}}]}`, "messages[0].content: want a string, null or an array of parts, got object"},
		{"content bool", `{"messages":[{"content":true}]}`, "messages[0].content: want a string, null or an array of parts, got boolean"},
		{"part string", `{"messages":[{"content":[{"type":"text","text":"a"},"b"]}]}`, "messages[0].content[1]: want an object, got string"},
		{"part type", `{"messages":[{"content":[{"type":1}]}]}`, "messages[0].content[0].type: want a string, got number"},
		{"part text", `{"messages":[{"content":[{"type":"text","text":["a"]}]}]}`, "messages[0].content[0].text: want a string, got array"},
		{"image_url number", `{"messages":[{"content":[{"type":"image_url","image_url":7}]}]}`, "messages[0].content[0].image_url: want an object or a string, got number"},
		{"image_url.url", `{"messages":[{"content":[{"image_url":{"url":false}}]}]}`, "messages[0].content[0].image_url.url: want a string, got boolean"},
		{"image_url.detail", `{"messages":[{"content":[{"image_url":{"detail":1}}]}]}`, "messages[0].content[0].image_url.detail: want a string, got number"},
		{"file string", `{"messages":[{"content":[{"type":"file","file":"a.pdf"}]}]}`, "messages[0].content[0].file: want an object, got string"},
		{"file.file_data", `{"messages":[{"content":[{"type":"file","file":{"file_data":{}}}]}]}`, "messages[0].content[0].file.file_data: want a string, got object"},
		{"refusal", `{"messages":[{"content":[{"type":"refusal","refusal":false}]}]}`, "messages[0].content[0].refusal: want a string, got boolean"},
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
			"body is not valid JSON: invalid character '}' at start of value at byte 59"},
		{"parameters too deep", `{"tools":[{"parameters":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat("}", 10000) + `}]}`,
			"body nests deeper than 10000 levels at byte 50009"},
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
		{"response_format string", `{"response_format":"json_object"}`, "response_format: want an object, got string"},
		{"response_format.type", `{"response_format":{"type":1}}`, "response_format.type: want a string, got number"},
		{"response_format.json_schema", `{"response_format":{"json_schema":[]}}`, "response_format.json_schema: want an object, got array"},
		{"response_format.json_schema.name", `{"response_format":{"json_schema":{"name":{}}}}`, "response_format.json_schema.name: want a string, got object"},
		{"response_format.json_schema.schema", `{"response_format":{"json_schema":{"schema":"{}"}}}`, "response_format.json_schema.schema: want an object, got string"},
		{"response_format.json_schema.schema twice named", `{"response_format":{"json_schema":{"schema":{"a":1,"a":2}}}}`,
			"response_format.json_schema.schema: not valid JSON: duplicate object member name at byte 7"},
		{"response_format.json_schema.strict", `{"response_format":{"json_schema":{"strict":"yes"}}}`, "response_format.json_schema.strict: want a boolean, got string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, err := DecodeRequest([]byte(tt.body))
			require.Error(t, err)
			require.Nil(t, got)
			require.ErrorIs(t, err, fault.ErrInvalidBody)
			require.Equal(t, "invalid request body: "+tt.want, err.Error())
		})
	}
}

// TestDecodeRequestToolChoiceErrors: a tool_choice of the right JSON type but a value the
// gateway cannot honour is an invalid request, worded as the translator words its own.
func TestDecodeRequestToolChoiceErrors(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"tool_choice":"sometimes"}`:                               `tool_choice "sometimes" is not one of "auto", "none", "required", "any" or a function object`,
		`{"tool_choice":{"type":"maybe"}}`:                          `tool_choice.type "maybe" is not one of "auto", "none", "required", "any", "function"`,
		`{"tool_choice":{"type":"function"}}`:                       `tool_choice.function.name is required when tool_choice.type is "function"`,
		`{"tool_choice":{"type":"function","function":{"name":1}}}`: `tool_choice.function.name is required when tool_choice.type is "function"`,
		`{"tool_choice":{}}`:                                        `tool_choice.type is required`,
		`{"tool_choice":{"type":"function","x":[1e999]}}`:           `tool_choice.function.name is required when tool_choice.type is "function"`,
	} {
		_, _, err := DecodeRequest([]byte(body))
		require.ErrorIs(t, err, fault.ErrInvalidRequest, body)
		require.Equal(t, "invalid request: "+want, err.Error(), body)
	}
}

func agentTurnBody(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/agent_turn.json")
	require.NoError(t, err)
	return b
}

// TestDecodeRequestDoesNotAliasBody: the server reads bodies into pooled buffers and
// reuses them once decoded, so neither a request nor an error may keep a byte of the body.
func TestDecodeRequestDoesNotAliasBody(t *testing.T) {
	t.Parallel()
	body := agentTurnBody(t)
	req, _, err := DecodeRequest(body)
	require.NoError(t, err)
	want, _, err := DecodeRequest(agentTurnBody(t))
	require.NoError(t, err)
	for i := range body {
		body[i] = 'X'
	}
	require.Empty(t, cmp.Diff(want, req), "the request changed with the body")
	for _, bad := range []string{`{"tools":[{"function":{"name":1}}]}`, `{"messages":[{"role":"user","content":"a\x"}]}`, `{"unknown_field":[1,}`} {
		body := []byte(bad)
		_, _, err := DecodeRequest(body)
		require.Error(t, err)
		msg := err.Error()
		for i := range body {
			body[i] = 'X'
		}
		require.Equal(t, msg, err.Error(), "the error changed with the body")
	}
}

// FuzzDecodeRequest: no body panics the decoder; a body it refuses gets an error naming a
// member or the syntax (the syntax when the body is not JSON at all); a body it accepts is
// JSON, and every tool schema it keeps is a compact JSON object.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		protocolExample,
		string(agentTurnBody(f)),
		``,
		`{}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":"u"}]}]}`,
		`{"tools":[{"name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"messages":[{"tool_calls":[{"function":{"arguments":{"n":12345678901234567890}}}]}],"stop":"x"}`,
		`{"model":"\ud83d\ude00\ud800","max_tokens":1e3,"temperature":-0.0e-0}`,
		`{"stop":["a",1]}`,
		"{\"tools\":[{\"function\":{\"parameters\": { \"d\" : \"a \\\" } \\\\\" ,\n\t\"n\":[ 12345678901234567890 , 0.1 ] }}},{\"parameters\":null}]}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, _, err := DecodeRequest(body)
		if err != nil {
			require.Nil(t, req)
			if errors.Is(err, fault.ErrInvalidRequest) {
				require.True(t, strings.HasPrefix(err.Error(), "invalid request: tool_choice"), "%v", err)
				return
			}
			require.ErrorIs(t, err, fault.ErrInvalidBody)
			msg := err.Error()
			if strings.Contains(msg, "not valid JSON") || strings.Contains(msg, "body is empty") {
				require.False(t, lenientJSON(body), "called valid JSON malformed: %s", msg)
			} else if !strings.Contains(msg, "nests deeper") {
				require.True(t, lenientJSON(body), "blamed a member of malformed JSON: %s", msg)
			}
			return
		}
		require.True(t, lenientJSON(body), "accepted malformed JSON")
		for i, tool := range req.Tools {
			if tool.Parameters == nil {
				continue
			}
			v := jsontext.Value(bytes.Clone(tool.Parameters))
			require.NoError(t, v.Compact())
			require.Equal(t, string(v), string(tool.Parameters), "tools[%d] is not compact", i)
			require.Equal(t, jsontext.Kind('{'), v.Kind(), "tools[%d]", i)
		}
	})
}

// lenientJSON reports whether b is one JSON value as the decoder reads it: invalid UTF-8,
// lone surrogates and repeated names allowed.
func lenientJSON(b []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if _, err := dec.ReadValue(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return err == io.EOF
}

// TestQueryBooleans: a query switch that is not a boolean is refused naming the
// parameter.
func TestQueryBooleans(t *testing.T) {
	t.Parallel()
	req := &chat.Request{}
	stream, chunked, err := applyQuery(req, url.Values{"stream": {"1"}, "chunked": {"false"}, "reasoning": {"true"}}, false)
	require.NoError(t, err)
	require.True(t, stream)
	require.False(t, chunked)
	require.True(t, req.StreamReasoning)

	_, _, err = applyQuery(req, url.Values{"chunked": {"maybe"}}, false)
	var refused *fault.RequestError
	require.ErrorAs(t, err, &refused)
	require.EqualError(t, err, `invalid request: query parameter chunked="maybe": want true or false`)
	require.Equal(t, "chunked", refused.Param)
}
