package translate

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"get_weather":           true,
		"a-b_C9":                true,
		"-":                     true,
		strings.Repeat("a", 64): true,
		strings.Repeat("a", 65): false,
		"":                      false,
		"fs.read":               false,
		"call:1":                false,
		"has space":             false,
		"日本":                    false,
	}
	for in, want := range tests {
		assert.Equal(t, want, validName(in), "%q", in)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "fs_read_file", sanitize("fs.read_file"))
	assert.Equal(t, "a_b", sanitize("a日b"), "one _ per rune")
	assert.Equal(t, "__", sanitize("\xff\xfe"), "invalid UTF-8 bytes are replaced one by one")
	assert.Len(t, sanitize(strings.Repeat("x.", 100)), maxNameLen)
}

// TestAllocator: valid names are kept, substitutes are valid, unique, readable when they
// can be, and never take a name the client uses validly elsewhere.
func TestAllocator(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 70)
	inputs := []string{"fs.read", "fs:read", "fs_read", long + "_a", long + "_b", "ok", "ok", "日本語", ""}

	a := newAllocator()
	for _, s := range inputs {
		a.reserve(s)
	}
	got := make([]string, len(inputs))
	seen := map[string]bool{}
	for i, s := range inputs {
		got[i] = a.take(s, i)
		assert.True(t, validName(got[i]), "%q → %q", s, got[i])
		assert.False(t, seen[got[i]], "%q handed out twice", got[i])
		seen[got[i]] = true
	}
	assert.Equal(t, "fs_read", got[2], "a valid name keeps itself even when an invalid one sanitizes to it")
	assert.NotEqual(t, "fs_read", got[0])
	assert.True(t, strings.HasPrefix(got[0], "fs_read_"), got[0])
	assert.True(t, strings.HasPrefix(got[1], "fs_read_"), got[1])
	assert.Equal(t, long[:maxNameLen], got[3], "a long name is cut when that collides with nothing")
	assert.Len(t, got[4], maxNameLen)
	assert.Equal(t, "ok", got[5])
	assert.NotEqual(t, "ok", got[6], "a second use of an id gets a fresh one")
	assert.Equal(t, "___", got[7])
	assert.Len(t, got[8], 8, "an empty string gets the hash alone")

	// Same inputs, same outputs.
	b := newAllocator()
	for _, s := range inputs {
		b.reserve(s)
	}
	for i, s := range inputs {
		assert.Equal(t, got[i], b.take(s, i))
	}
}

func TestNamesNil(t *testing.T) {
	t.Parallel()
	var n *Names
	assert.Equal(t, "x.y", n.ToolName("x.y"))
	assert.Equal(t, "id", n.ToolCallID("id"))
}

// TestStructSchema: the writer for schemas that arrive as a Struct (gRPC clients).
func TestStructSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want, err string
	}{
		{name: "nil", want: `{"type":"object","properties":{}}`},
		{name: "empty", in: `{}`, want: `{"type":"object","properties":{}}`},
		{name: "type added", in: `{"properties":{"a":{"type":"string"}}}`, want: `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{name: "keys sorted, numbers plain", in: `{"type":"object","z":1,"a":[1.5,2,1e21,1e-7,-0.5,true,null],"m":{"y":"<&>日本語","x":"\"\\\n\u0001"}}`,
			want: `{"a":[1.5,2,1e+21,1e-7,-0.5,true,null],"m":{"x":"\"\\\n\u0001","y":"<&>日本語"},"type":"object","z":1}`},
		{name: "array root", in: `{"type":"array"}`, err: `root "type" is "object"`},
		{name: "type list", in: `{"type":["object","null"]}`, err: `root "type" is "object"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s *structpb.Struct
			if tt.in != "" {
				s = &structpb.Struct{}
				require.NoError(t, protojson.Unmarshal([]byte(tt.in), s))
			}
			got, err := structSchema(s)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
	t.Run("not finite", func(t *testing.T) {
		t.Parallel()
		s := &structpb.Struct{Fields: map[string]*structpb.Value{"max": structpb.NewNumberValue(math.Inf(1))}}
		_, err := structSchema(s)
		require.ErrorContains(t, err, "not finite")
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		t.Parallel()
		s := &structpb.Struct{Fields: map[string]*structpb.Value{"d": structpb.NewStringValue("a\xffb")}}
		got, err := structSchema(s)
		require.NoError(t, err)
		assert.Equal(t, "{\"d\":\"a\uFFFDb\",\"type\":\"object\"}", string(got))
	})
	t.Run("escapes as jsonapi.AppendString", func(t *testing.T) {
		t.Parallel()
		s := &structpb.Struct{Fields: map[string]*structpb.Value{"d": structpb.NewStringValue("\b\f\u2028<&>")}}
		got, err := structSchema(s)
		require.NoError(t, err)
		assert.Equal(t, `{"d":"\b\f\u2028<&>","type":"object"}`, string(got))
	})
}

// TestJSONSchema: a schema given as JSON text (parameters_json) reaches Bedrock as the
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
		{name: "syntax", in: `{"type":"object",}`, err: "is not valid JSON: invalid character '}' looking for beginning of object key string at byte 17"},
		{name: "two values", in: `{} {}`, err: "is not valid JSON: invalid character '{' after top-level value at byte 3"},
		{name: "too deep", in: `{"a":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, err: "nests deeper than 1000 levels at byte 1004"},
		{name: "invalid UTF-8", in: "{\"d\":\"\xff\"}", err: "is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := jsonSchema(tt.in)
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
		got, err := jsonSchema(in)
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

// TestInputSchemaPrecedence: parameters_json wins over the Struct; neither is the empty
// object schema.
func TestInputSchemaPrecedence(t *testing.T) {
	t.Parallel()
	st, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"from_struct": map[string]any{}}})
	require.NoError(t, err)
	got, err := inputSchema(toolDef{parametersJSON: `{"properties":{"from_json":{}}}`, parameters: st})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"object","properties":{"from_json":{}}}`, string(got))
	got, err = inputSchema(toolDef{parameters: st})
	require.NoError(t, err)
	assert.Equal(t, `{"properties":{"from_struct":{}},"type":"object"}`, string(got))
	got, err = inputSchema(toolDef{})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"object","properties":{}}`, string(got))
}

func TestReadToolChoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in         string // protojson of a google.protobuf.Value; "" = missing
		kind, name string
		err        string
	}{
		{in: "", kind: choiceUnset},
		{in: `null`, kind: choiceUnset},
		{in: `""`, kind: choiceUnset},
		{in: `"auto"`, kind: choiceAuto},
		{in: `"none"`, kind: choiceNone},
		{in: `"required"`, kind: choiceRequired},
		{in: `"any"`, kind: choiceRequired},
		{in: `{"type":"auto"}`, kind: choiceAuto},
		{in: `{"type":"none"}`, kind: choiceNone},
		{in: `{"type":"any"}`, kind: choiceRequired},
		{in: `{"type":"function","function":{"name":"f"}}`, kind: choiceFunction, name: "f"},
		{in: `{"function":{"name":"f"}}`, kind: choiceFunction, name: "f"},
		{in: `{"type":"function","name":"f"}`, kind: choiceFunction, name: "f"},
		{in: `{"type":"function"}`, err: "tool_choice.function.name is required"},
		{in: `{"type":"function","function":{"name":""}}`, err: "tool_choice.function.name is required"},
		{in: `{"type":"tool_x"}`, err: `tool_choice.type "tool_x"`},
		{in: `{}`, err: "tool_choice.type is required"},
		{in: `"always"`, err: `tool_choice "always"`},
		{in: `3`, err: "tool_choice must be a string or an object"},
		{in: `true`, err: "tool_choice must be a string or an object"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var v *structpb.Value
			if tt.in != "" {
				v = &structpb.Value{}
				require.NoError(t, protojson.Unmarshal([]byte(tt.in), v))
			}
			kind, name, err := readToolChoice(v)
			if tt.err != "" {
				require.ErrorIs(t, err, ErrInvalidRequest)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.kind, kind)
			assert.Equal(t, tt.name, name)
		})
	}
}

// TestBedrockToolChoice is the gating table of rule 12 over the capabilities seed table.
func TestBedrockToolChoice(t *testing.T) {
	t.Parallel()
	auto := &bedrock.ToolChoice{Auto: &struct{}{}}
	anyChoice := &bedrock.ToolChoice{Any: &struct{}{}}
	tool := &bedrock.ToolChoice{Tool: &bedrock.SpecificToolChoice{Name: "f"}}
	tests := []struct {
		model, kind string
		want        *bedrock.ToolChoice
		fallback    string
	}{
		{testModel, choiceUnset, nil, ""},
		{testModel, choiceAuto, auto, ""},
		{testModel, choiceRequired, anyChoice, ""},
		{testModel, choiceFunction, tool, ""},
		{"mistral.mistral-large-2407-v1:0", choiceRequired, anyChoice, ""},
		{"mistral.mistral-large-2407-v1:0", choiceFunction, auto, "tool"},
		{"meta.llama3-1-70b-instruct-v1:0", choiceRequired, auto, "any"},
		{"cohere.command-r-plus-v1:0", choiceFunction, auto, "tool"},
		{"ai21.jamba-1-5-large-v1:0", choiceAuto, auto, ""},
		{"amazon.titan-text-express-v1", choiceAuto, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.kind, func(t *testing.T) {
			t.Parallel()
			var stats Stats
			got := bedrockToolChoice(tt.kind, "f", capabilities.Lookup(tt.model), &stats)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.fallback, stats.ToolChoiceFallback)
		})
	}
}
