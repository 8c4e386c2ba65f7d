package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// TestJSONSchema: a schema given as JSON text reaches Bedrock as the
// client wrote it, compacted, with "type":"object" inserted first when missing.
func TestJSONSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want, err string
	}{
		{name: "kept", in: `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b"]}`,
			want: `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b"]}`},
		{name: "numbers verbatim, order kept, type last",
			in:   `{"properties":{"z":{"maximum":12345678901234567890,"multipleOf":0.1,"minimum":1E+2,"x":-0.0,"y":1e999}},"type":"object"}`,
			want: `{"properties":{"z":{"maximum":12345678901234567890,"multipleOf":0.1,"minimum":1E+2,"x":-0.0,"y":1e999}},"type":"object"}`},
		{name: "compacted, strings untouched",
			in:   " {\n\t\"type\" : \"object\" ,\r\n \"description\": \"a  b \\\" } \\\\ \\n \\u00e9 <&> 日本語\", \"enum\" : [ 1 , \" x \" ] }\n",
			want: `{"type":"object","description":"a  b \" } \\ \n \u00e9 <&> 日本語","enum":[1," x "]}`},
		{name: "type added first", in: `{"properties":{"type":{"type":"string"}},"required":["type"]}`,
			want: `{"type":"object","properties":{"type":{"type":"string"}},"required":["type"]}`},
		{name: "type added to one member", in: `{"additionalProperties":false}`, want: `{"type":"object","additionalProperties":false}`},
		{name: "type added after compaction", in: `{ "a" : 1 }`, want: `{"type":"object","a":1}`},
		{name: "empty", in: `{}`, want: `{"type":"object","properties":{}}`},
		{name: "empty with space", in: ` { } `, want: `{"type":"object","properties":{}}`},
		{name: "escaped key and value", in: `{"typ\u0065":"obj\u0065ct"}`, want: `{"typ\u0065":"obj\u0065ct"}`},
		{name: "nested type is not the root's", in: `{"items":{"type":"array"},"x":["type"]}`, want: `{"type":"object","items":{"type":"array"},"x":["type"]}`},
		{name: "duplicate types both object", in: `{"type":"object","type":"object"}`, want: `{"type":"object","type":"object"}`},

		{name: "array root type", in: `{"type":"array"}`, err: `must be a JSON Schema whose root "type" is "object", not "array"`},
		{name: "escaped wrong type", in: `{"type":"\u0061rray"}`, err: `root "type" is "object", not "array"`},
		{name: "type list", in: `{"type":["object","null"]}`, err: `must be a JSON Schema whose root "type" is "object"`},
		{name: "type null", in: `{"type":null}`, err: `must be a JSON Schema whose root "type" is "object"`},
		{name: "duplicate type, second wrong", in: `{"type":"object","type":"string"}`, err: `not "string"`},
		{name: "array", in: `[{"type":"object"}]`, err: "must be a JSON object, not an array"},
		{name: "string", in: `"{}"`, err: "must be a JSON object, not a string"},
		{name: "number", in: `1`, err: "must be a JSON object, not a number"},
		{name: "null", in: `null`, err: "must be a JSON object, not null"},
		{name: "blank", in: `  `, err: "is not valid JSON: unexpected end of input at byte 2"},
		{name: "syntax", in: `{"type":"object",}`, err: "is not valid JSON: invalid character '}' at start of string (expecting '\"') at byte 17"},
		{name: "two values", in: `{} {}`, err: "is not valid JSON: invalid character '{' after top-level value at byte 3"},
		{name: "too deep", in: `{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, err: "nests deeper than 10000 levels at byte 10004"},
		{name: "invalid UTF-8", in: "{\"d\":\"\xff\"}", err: "is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := jsonSchema([]byte(tt.in))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

// FuzzJSONSchema: jsonSchema never panics; it accepts exactly the JSON objects whose root
// "type" members (if any) are all "object", and returns the compacted input, with
// "type":"object" inserted first where none was given ({} gets the empty object schema).
// The expectation is computed with encoding/json, independently of jsonSchema's scanners.
func FuzzJSONSchema(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { } `, `{"type":"object"}`, `{"properties":{"a":{"type":"string"}}}`,
		`{"type":"array"}`, `{"type":["object"]}`, `{"typ\u0065":"obj\u0065ct","x":"\"}"}`,
		"{ \"a\" : [ 1 , { \"b\" : \" \\\" \" } ] ,\n\t\"type\":\"object\" }",
		`{"a":"\\","type":"object","type":"object"}`, `[]`, `"x"`, `{"a":}`, `{"a":1e999,"b":-0.0E+1}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := jsonSchema([]byte(in))
		if err != nil && strings.Contains(err.Error(), "nests deeper than") {
			return // beyond jsontext.MaxDepth: refused, though encoding/json reads it
		}

		var compact bytes.Buffer
		valid := utf8.ValidString(in) && json.Compact(&compact, []byte(in)) == nil
		wantOK, hasType := valid && compact.Bytes()[0] == '{', false
		if wantOK {
			dec := json.NewDecoder(strings.NewReader(in))
			_, _ = dec.Token() // {
			for dec.More() {
				key, _ := dec.Token()
				var v json.RawMessage
				require.NoError(t, dec.Decode(&v))
				if key == "type" {
					hasType = true
					var s string
					if json.Unmarshal(v, &s) != nil || s != "object" {
						wantOK = false
					}
				}
			}
		}
		if !wantOK {
			require.Error(t, err, "accepted %q as %s", in, got)
			var se schemaError
			require.ErrorAs(t, err, &se)
			return
		}
		require.NoError(t, err, "refused %q", in)
		want := compact.String()
		switch {
		case want == "{}":
			want = string(emptyObjectSchema)
		case !hasType:
			want = `{"type":"object",` + want[1:]
		}
		require.Equal(t, want, string(got))
	})
}

// TestBedrockToolChoice is the gating table of rule 12 over the capabilities seed table.
func TestBedrockToolChoice(t *testing.T) {
	t.Parallel()
	auto := &bedrock.ToolChoice{Auto: &struct{}{}}
	anyChoice := &bedrock.ToolChoice{Any: &struct{}{}}
	tool := &bedrock.ToolChoice{Tool: &bedrock.SpecificToolChoice{Name: "f"}}
	const testModel = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	tests := []struct {
		model, mode string
		want        *bedrock.ToolChoice
		fallback    string
	}{
		{testModel, "", nil, ""},
		{testModel, chat.ChoiceAuto, auto, ""},
		{testModel, chat.ChoiceRequired, anyChoice, ""},
		{testModel, chat.ChoiceFunction, tool, ""},
		{"mistral.mistral-large-2407-v1:0", chat.ChoiceRequired, anyChoice, ""},
		{"mistral.mistral-large-2407-v1:0", chat.ChoiceFunction, auto, "tool"},
		{"meta.llama3-1-70b-instruct-v1:0", chat.ChoiceRequired, auto, "any"},
		{"cohere.command-r-plus-v1:0", chat.ChoiceFunction, auto, "tool"},
		{"ai21.jamba-1-5-large-v1:0", chat.ChoiceAuto, auto, ""},
		{"amazon.titan-text-express-v1", chat.ChoiceAuto, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.mode, func(t *testing.T) {
			t.Parallel()
			var stats Stats
			got := bedrockToolChoice(tt.mode, "f", capabilities.Lookup(tt.model), &stats)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.fallback, stats.ToolChoiceFallback)
		})
	}
}
