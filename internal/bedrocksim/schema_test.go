package bedrocksim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// violations checks instance against schema with the keywords the simulator's schemas use
// (a test's own small validator, so that "an instance of the schema" and "breaks the schema"
// are checked by something other than the code that builds them): type, required,
// properties, additionalProperties, items, prefixItems, enum, const, the numeric bounds,
// multipleOf, minLength, maxLength, minItems, maxItems, local $ref, anyOf, oneOf and allOf.
// It returns one "<JSON pointer>: <rule>" line per violation.
func violations(t testing.TB, schema, instance string) []string {
	t.Helper()
	var root, value any
	require.NoError(t, json.Unmarshal([]byte(schema), &root), schema)
	require.NoError(t, json.Unmarshal([]byte(instance), &value), instance)
	var out []string
	checkInstance(root, root, value, "", 0, &out)
	return out
}

func checkInstance(root, schema, v any, at string, depth int, out *[]string) {
	s, ok := schema.(map[string]any)
	if !ok || depth > 64 {
		return
	}
	fail := func(format string, args ...any) {
		where := at
		if where == "" {
			where = "/"
		}
		*out = append(*out, where+": "+fmt.Sprintf(format, args...))
	}
	if ref, ok := s["$ref"].(string); ok {
		target := root
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
			target = target.(map[string]any)[tok]
		}
		checkInstance(root, target, v, at, depth+1, out)
	}
	if ts := typesOf(s["type"]); len(ts) > 0 && !slices.ContainsFunc(ts, func(t string) bool { return hasType(v, t) }) {
		fail("expected %s, got %T", strings.Join(ts, " or "), v)
		return
	}
	if c, ok := s["const"]; ok && !equalJSON(c, v) {
		fail("not the const")
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equalJSON(x, v) }) {
		fail("not in the enum")
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		alts, _ := s[key].([]any)
		if len(alts) == 0 {
			continue
		}
		passed := 0
		for _, alt := range alts {
			var sub []string
			checkInstance(root, alt, v, at, depth+1, &sub)
			if len(sub) == 0 {
				passed++
			}
		}
		switch {
		case key == "anyOf" && passed == 0, key == "oneOf" && passed != 1, key == "allOf" && passed != len(alts):
			fail("%s: %d of %d alternatives pass", key, passed, len(alts))
		}
	}
	switch v := v.(type) {
	case float64:
		if m, ok := s["minimum"].(float64); ok && v < m {
			fail("below minimum %v", m)
		}
		if m, ok := s["maximum"].(float64); ok && v > m {
			fail("above maximum %v", m)
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && v <= m {
			fail("not above exclusiveMinimum %v", m)
		}
		if m, ok := s["exclusiveMaximum"].(float64); ok && v >= m {
			fail("not below exclusiveMaximum %v", m)
		}
		if m, ok := s["multipleOf"].(float64); ok && m > 0 && math.Abs(v/m-math.Round(v/m)) > 1e-9 {
			fail("not a multiple of %v", m)
		}
	case string:
		if m, ok := s["minLength"].(float64); ok && float64(utf8.RuneCountInString(v)) < m {
			fail("shorter than %v", m)
		}
		if m, ok := s["maxLength"].(float64); ok && float64(utf8.RuneCountInString(v)) > m {
			fail("longer than %v", m)
		}
	case []any:
		if m, ok := s["minItems"].(float64); ok && float64(len(v)) < m {
			fail("fewer items than %v", m)
		}
		if m, ok := s["maxItems"].(float64); ok && float64(len(v)) > m {
			fail("more items than %v", m)
		}
		prefix, _ := s["prefixItems"].([]any)
		for i, item := range v {
			sub := s["items"]
			if i < len(prefix) {
				sub = prefix[i]
			}
			checkInstance(root, sub, item, fmt.Sprintf("%s/%d", at, i), depth+1, out)
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		required, _ := s["required"].([]any)
		for _, name := range required {
			if _, ok := v[name.(string)]; !ok {
				fail("missing required property %q", name)
			}
		}
		for name, value := range v {
			if p, ok := props[name]; ok {
				checkInstance(root, p, value, at+"/"+name, depth+1, out)
			} else if s["additionalProperties"] == false {
				fail("property %q not allowed", name)
			}
		}
	}
}

func typesOf(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func hasType(v any, t string) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || t == "integer" && v == math.Trunc(v)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a, json.Deterministic(true))
	y, _ := json.Marshal(b, json.Deterministic(true))
	return string(x) == string(y)
}

// instanceSchemas are schemas whose examples must be instances of them.
var instanceSchemas = []string{
	weatherSchema, timeSchema, noArgsSchema,
	`{"type":"object","properties":{"n":{"type":"integer","minimum":100}},"required":["n"]}`,
	`{"type":"object","properties":{"n":{"type":"integer","maximum":10},"m":{"type":"integer","exclusiveMaximum":42},"k":{"type":"integer","exclusiveMinimum":42}}}`,
	`{"type":"object","properties":{"x":{"type":"number","minimum":2,"maximum":3},"y":{"type":"number","exclusiveMinimum":1.5},"z":{"type":"number","maximum":-7.25}}}`,
	`{"type":"object","properties":{"n":{"type":"integer","multipleOf":5,"minimum":43}}}`,
	`{"type":"object","properties":{"n":{"type":"integer","multipleOf":10}}}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":12},"t":{"type":"string","maxLength":3}}}`,
	`{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"},"minItems":3},"e":{"type":"array","maxItems":0}}}`,
	`{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}]}}}`,
	`{"type":"object","$defs":{"addr":{"type":"object","properties":{"zip":{"type":"string"}},"required":["zip"],"additionalProperties":false}},"properties":{"home":{"$ref":"#/$defs/addr"},"work":{"$ref":"#/$defs/addr"}},"required":["home"],"additionalProperties":false}`,
	`{"type":"object","definitions":{"n":{"type":"integer","minimum":1000}},"properties":{"v":{"$ref":"#/definitions/n"}}}`,
	`{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}},"left":{"$ref":"#"},"right":{"$ref":"#"}},"required":["name"]}`,
	`{"type":"object","properties":{"v":{"anyOf":[{"type":"integer","minimum":7},{"type":"string"}]},"w":{"type":["null","number"],"maximum":0}}}`,
	`{"type":"object","properties":{"u":{"enum":["a","b"]},"c":{"const":3},"f":{"type":"string","format":"date-time"}}}`,
}

func TestExampleArgsInstances(t *testing.T) {
	t.Parallel()
	for _, schema := range instanceSchemas {
		got := exampleArgs(jsontext.Value(schema))
		assert.Empty(t, violations(t, schema, string(got)), "%s\n%s", schema, got)
	}
}

func TestExampleArgsBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, schema, want string }{
		{"minimum", `{"type":"object","properties":{"n":{"type":"integer","minimum":100}}}`, `{"n":100}`},
		{"maximum", `{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}`, `{"n":10}`},
		{"exclusive", `{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":42}}}`, `{"n":43}`},
		{"number between", `{"type":"object","properties":{"x":{"type":"number","minimum":2,"maximum":3}}}`, `{"x":2.5}`},
		{"in bounds", `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":100}}}`, `{"n":42}`},
		{"multipleOf", `{"type":"object","properties":{"n":{"type":"integer","multipleOf":5,"minimum":43}}}`, `{"n":45}`},
		{"lengths", `{"type":"object","properties":{"s":{"type":"string","minLength":9},"t":{"type":"string","maxLength":3}}}`, `{"s":"examplexx","t":"exa"}`},
		{"items", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"boolean"},"minItems":3},"e":{"type":"array","maxItems":0}}}`, `{"l":[true,true,true],"e":[]}`},
		{"prefixItems", `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`, `{"p":["example",42]}`},
		{"$ref", `{"type":"object","$defs":{"a":{"type":"object","properties":{"z":{"type":"integer"}}}},"properties":{"h":{"$ref":"#/$defs/a"}}}`, `{"h":{"z":42}}`},
		{"remote $ref", `{"type":"object","properties":{"h":{"$ref":"https://example.com/a.json"}}}`, `{"h":"example"}`},
		{"recursion ends", `{"type":"object","properties":{"name":{"type":"string"},"next":{"$ref":"#"}},"required":["name"]}`, `{"name":"example","next":{"name":"example","next":{"name":"example"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, string(exampleArgs(jsontext.Value(tc.schema))))
		})
	}
}

// TestExampleArgsBounded: a schema whose every definition refers to every other cannot make
// the builder write without end.
func TestExampleArgsBounded(t *testing.T) {
	t.Parallel()
	var defs, props []string
	for i := range 8 {
		var refs []string
		for j := range 8 {
			refs = append(refs, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, j, j))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{%s},"required":["p%d"]}`, i, strings.Join(refs, ","), (i+1)%8))
		props = append(props, fmt.Sprintf(`"x%d":{"$ref":"#/$defs/d%d"}`, i, i))
	}
	schema := `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{` + strings.Join(props, ",") + `}}`
	got := exampleArgs(jsontext.Value(schema))
	assert.True(t, jsontext.Value(got).IsValid())
	assert.Less(t, len(got), 2*maxExampleBytes)
}
