package toolcheck

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Schemas of the shapes the fast path takes, and some it does not.
var fastSchemas = []struct {
	name, schema string
	fast         bool // the fast path takes it
}{
	{"bench weather", `{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":10},"include_hourly":{"type":"boolean"}},"required":["city"]}`, true},
	{"bench docs", `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"since":{"type":"string","format":"date-time"}},"required":["query"]}`, true},
	{"closed", `{"type":"object","properties":{"name":{"type":"string","minLength":2,"maxLength":5},"n":{"type":["integer","null"],"exclusiveMinimum":-3,"exclusiveMaximum":7},"x":{"type":"number","minimum":0}},"required":["name","n"],"additionalProperties":false}`, true},
	{"open", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","enum":["p","q","é"]},"minItems":1,"maxItems":3},"b":true,"o":{"type":"object","properties":{"z":{"type":"integer"}},"required":["z"]}},"additionalProperties":true}`, true},
	{"map", `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string","maxLength":3}}}}`, true},
	{"untyped", `{"properties":{"v":{},"w":{"items":{"type":"boolean"}}}}`, true},
	{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"t":{"type":"array","items":{"type":"integer","maximum":5}}}}`, true},
	{"draft-04 exclusive", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","maximum":3,"exclusiveMaximum":true}}}`, true},
	{"save policy", savePolicy, true},
	{"deploy 2020", deploy2020, false}, // $ref, pattern, uniqueItems, oneOf
	{"deploy 07", deploy07, false},     // $ref, tuple items, dependencies
	{"fraction bound", `{"type":"object","properties":{"p":{"type":"number","maximum":0.5}}}`, false},
	{"number enum", `{"type":"object","properties":{"p":{"enum":["a",1]}}}`, false},
	{"pattern", `{"type":"object","properties":{"p":{"type":"string","pattern":"^a"}}}`, false},
	{"regex format", `{"type":"object","properties":{"p":{"type":"string","format":"regex"}}}`, true}, // an annotation in 2020-12
	{"regex format, draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"type":"string","format":"regex"}}}`, false},
	{"map beside properties", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`, false},
	{"required only", `{"type":"object","required":["p"]}`, false},
	{"false property", `{"type":"object","properties":{"p":false}}`, true},
}

// Arguments that test the edges of what the fast path judges.
var fastArguments = []string{
	`{}`, `[]`, `"x"`, `1`, `null`, ``, `{`, `{"city":"Paris"}x`, `{"city":"Paris"} {}`,
	`{"city":"Paris"}`, `{"city":"Paris","unit":"celsius","days":3,"include_hourly":true}`,
	`{"city":"Paris","days":0}`, `{"city":"Paris","days":10}`, `{"city":"Paris","days":11}`, `{"city":"Paris","days":1.0}`,
	`{"city":"Paris","days":1e0}`, `{"city":"Paris","days":-0}`, `{"city":"Paris","days":"3"}`, `{"city":"Paris","unit":"kelvin"}`,
	`{"city":"Paris","city":"Lyon"}`, `{"city":"Paris","\u0063ity":"Lyon"}`, `{"\u0063ity":"Paris"}`, `{"city":"Par\u00efs"}`,
	`{"city":"Pa` + "\xff" + `ris"}`, `{"city":null}`, `{"city":"Paris","extra":{"deep":[1,2,{"x":null}]}}`,
	`{"query":"flood","limit":99999999999999999999}`, `{"query":"flood","limit":1e999999}`, `{"query":"x","since":"not a date"}`,
	`{"name":"ab","n":0}`, `{"name":"abcdef","n":0}`, `{"name":"a","n":0}`, `{"name":"ééé","n":null}`, `{"name":"ab","n":-3}`,
	`{"name":"ab","n":6}`, `{"name":"ab","n":7}`, `{"name":"ab","n":0,"x":-1}`, `{"name":"ab","n":0,"x":0.25}`,
	`{"name":"ab","n":0,"y":1}`, `{"name":"ab"}`, `{"n":1}`, `{"name":"ab","n":1.5}`,
	`{"a":["p"]}`, `{"a":[]}`, `{"a":["p","q","é","p"]}`, `{"a":["r"]}`, `{"a":"p"}`, `{"b":{"any":[1]}}`, `{"o":{"z":1}}`, `{"o":{}}`,
	`{"o":{"z":"1"}}`, `{"zz":1,"yy":[{},{}]}`, `{"labels":{"a":"x","b":"yyy"}}`, `{"labels":{"a":"xxxx"}}`, `{"labels":{"a":1}}`,
	`{"v":[1,"2",{}],"w":[true,false]}`, `{"w":[true,1]}`, `{"w":{"not":"an array"}}`, `{"t":[1,5]}`, `{"t":[6]}`, `{"n":3}`, `{"n":2}`,
	`{"p":1}`, `{"p":"abc"}`, `{"p":0.5}`,
	strings.Repeat(`{"e":`, 70) + `1` + strings.Repeat(`}`, 70),
	`{"city":"` + strings.Repeat("x", 5000) + `"}`,
	`{"city":"Paris","extra":"` + strings.Repeat("\\u00e9", 300) + `"}`,
}

// TestFastPathAgreesWithTheLibrary: for every schema and arguments, Check gives what the
// library alone gives (the same violations, error and budget spent); where the fast path
// judges the arguments valid, the library does too, and its count of their cost is the
// same. And the fast path takes the schemas it is meant for, and judges their valid
// calls itself.
func TestFastPathAgreesWithTheLibrary(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sc := range fastSchemas {
		s := mustSchema(t, c, sc.schema)
		assert.Equal(t, sc.fast, s.fast != nil, "%s: the fast path takes it", sc.name)
		args := append([]string(nil), fastArguments...)
		for range 1000 { // FuzzFastPath (make fuzz) searches further
			args = append(args, string(randomArguments(rng, sc.schema)))
		}
		fastValid := 0
		for _, a := range args {
			if agree(t, s, a) {
				fastValid++
			}
		}
		if sc.fast {
			assert.Positive(t, fastValid, "%s: no call was judged by the fast path", sc.name)
		}
	}
}

// agree checks one call both ways and reports whether the fast path judged it valid.
func agree(t *testing.T, s *Schema, arguments string) bool {
	t.Helper()
	library := &Schema{s: s.s, g: s.g}
	budget, libraryBudget := &Budget{checks: maxCost}, &Budget{checks: maxCost}
	got, gotErr := s.Check(arguments, budget)
	want, wantErr := library.Check(arguments, libraryBudget)
	require.Equal(t, want, got, "%s", clipArgs(arguments))
	require.Equal(t, wantErr, gotErr, "%s", clipArgs(arguments))
	require.Equal(t, libraryBudget.checks, budget.checks, "%s: budget spent", clipArgs(arguments))
	if s.fast == nil {
		return false
	}
	cost, valid := fastCheck(s.fast, arguments)
	if !valid {
		return false
	}
	require.Nil(t, want, "%s: valid to the fast path only", clipArgs(arguments))
	v, err := decode([]byte(arguments), maxArgumentDepth)
	require.NoError(t, err)
	require.Equal(t, s.g.cost(v), cost, "%s: cost", clipArgs(arguments))
	return true
}

func clipArgs(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// randomArguments builds an object of members the schema names and others, with values
// near the bounds tool schemas set: the fast path's edges.
func randomArguments(rng *rand.Rand, schema string) []byte {
	var names []string
	for _, part := range strings.Split(schema, `"`) {
		if part != "" && !strings.ContainsAny(part, "{}[],:") && len(part) < 20 {
			names = append(names, part)
		}
	}
	b := []byte{'{'}
	for i := range rng.IntN(5) {
		if i > 0 {
			b = append(b, ',')
		}
		name := names[rng.IntN(len(names))]
		if rng.IntN(20) == 0 {
			name = `\u00` + strconv.FormatInt(int64(name[0]), 16) + name[1:] // the same name, escaped
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = randomValue(rng, b, 2)
	}
	return append(b, '}')
}

func randomValue(rng *rand.Rand, b []byte, depth int) []byte {
	switch k := rng.IntN(12); {
	case k < 3:
		return strconv.AppendInt(b, int64(rng.IntN(25)-12), 10)
	case k == 3:
		return append(b, [...]string{"1.0", "2.5", "-0", "1e1", "3E0", "-0.0", "12345678901234567890", "0.1e-2"}[rng.IntN(8)]...)
	case k < 6:
		s := [...]string{"", "p", "q", "r", "é", "ab", "abcdef", "celsius", "fahrenheit", "x\\ny", "\\u00e9\\u00e9", "ééé"}[rng.IntN(12)]
		return fmt.Appendf(b, `"%s"`, s)
	case k == 6:
		return append(b, [...]string{"true", "false", "null"}[rng.IntN(3)]...)
	case k < 9 && depth > 0:
		b = append(b, '[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b = append(b, ',')
			}
			b = randomValue(rng, b, depth-1)
		}
		return append(b, ']')
	case depth > 0:
		b = append(b, '{')
		for i := range rng.IntN(3) {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `"%s":`, [...]string{"z", "a", "x", "p"}[rng.IntN(4)])
			b = randomValue(rng, b, depth-1)
		}
		return append(b, '}')
	}
	return append(b, '0')
}

// FuzzFastPath: Check with the fast path gives what the library alone gives, for any
// schema and arguments.
func FuzzFastPath(f *testing.F) {
	for _, sc := range fastSchemas {
		for _, a := range fastArguments[:20] {
			f.Add(sc.schema, a)
		}
	}
	c := NewCache(64, 1<<20, Limits{})
	f.Fuzz(func(t *testing.T, schema, args string) {
		s, err, _ := c.Schema([]byte(schema), nil)
		if err != nil || s == nil {
			return
		}
		agree(t, s, args)
	})
}

// BenchmarkCheckFast: a valid call of the load test's tool, through the fast path and
// through the library.
func BenchmarkCheckFast(b *testing.B) {
	c := NewCache(0, 0, Limits{})
	s := mustSchema(b, c, fastSchemas[0].schema)
	const args = `{"city":"Paris","unit":"celsius","days":3}`
	for _, path := range []struct {
		name string
		s    *Schema
	}{{"fast", s}, {"library", &Schema{s: s.s, g: s.g}}} {
		b.Run(path.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, err := path.s.Check(args, nil); v != nil || err != nil {
					b.Fatal(v, err)
				}
			}
		})
	}
}
