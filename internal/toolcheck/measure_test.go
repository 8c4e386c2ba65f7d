package toolcheck

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shapes of schema an attacker sends (docs/PROTOCOL.md 13.2), n large.

// anyOfShape is {"anyOf":[{"minimum":1},{},{},…]}: n members, each a subschema.
func anyOfShape(n int) string {
	return `{"anyOf":[{"minimum":1}` + strings.Repeat(`,{}`, n-1) + `]}`
}

// mapShape is an object schema with n members of keyword (properties, patternProperties,
// $defs), each a small subschema.
func mapShape(keyword string, n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","` + keyword + `":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// refChain is a schema whose root refers to a0, a0 to a1, … a(n-1) to an object: n+2
// schemas evaluated at one place.
func refChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"$ref":"#/$defs/a%d"},`, i, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"object"}}}`, n)
	return b.String()
}

// doubling is the exponential shape: $defs a0…a(n-1), each an anyOf of two $refs to the
// next, so a0 evaluates 2^n schemas at one place.
func doubling(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"integer"}}}`, n)
	return b.String()
}

// enumShape is a schema whose one property has an enum of n strings of size bytes.
func enumShape(n, size int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"e":{"enum":[`)
	pad := strings.Repeat("x", max(size-8, 0))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%06d%s"`, i, pad)
	}
	b.WriteString(`]}}}`)
	return b.String()
}

// small are limits a test reaches with a few bytes.
var small = Limits{MaxBytes: 2000, MaxSubschemas: 10, MaxMembers: 5, MaxDepth: 3, MaxRefDepth: 4, MaxPatternSize: 20}

func TestMeasureLimits(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, schema string
		limits       Limits
		want         string
	}{
		{"bytes", `{"description":"` + strings.Repeat("x", 2000) + `"}`, small, "2018 bytes, at most 2000 are allowed (schema_limits.max_bytes)"},
		{"subschemas", mapShape("$defs", 4) + strings.Repeat("", 0), Limits{MaxSubschemas: 4},
			"more than 4 subschemas (the next at /$defs/p3), at most 4 are allowed (schema_limits.max_subschemas)"},
		{"anyOf, the contract's example", anyOfShape(40001), Limits{},
			"40001 members in anyOf at /anyOf, at most 1000 are allowed (schema_limits.max_members)"},
		{"properties", mapShape("properties", 7), small, "7 members in properties at /properties, at most 5 are allowed (schema_limits.max_members)"},
		{"patternProperties", mapShape("patternProperties", 6), Limits{MaxMembers: 5},
			"6 members in patternProperties at /patternProperties, at most 5 are allowed (schema_limits.max_members)"},
		{"enum", `{"properties":{"e":{"enum":[1,2,3,4,5,6]}}}`, small, "6 members in enum at /properties/e/enum, at most 5 are allowed (schema_limits.max_members)"},
		{"required", `{"required":["a","b","c","d","e","f"]}`, small, "6 members in required at /required, at most 5 are allowed (schema_limits.max_members)"},
		{"deep in a value: its pointer is not quoted", `{"default":{"secret":[1,2,3,4,5,6]}}`, small,
			"6 members in default at /default/…, at most 5 are allowed (schema_limits.max_members)"},
		{"an unknown keyword", `{"x-tags":[1,2,3,4,5,6]}`, small, "6 members at /x-tags, at most 5 are allowed (schema_limits.max_members)"},
		{"keywords of one schema", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}`, small, "6 members in one schema at /, at most 5 are allowed (schema_limits.max_members)"},
		{"depth", `{"properties":{"a":{"items":{"not":{}}}}}`, small,
			"subschemas nested 4 deep at /properties/a/items/not, at most 3 are allowed (schema_limits.max_depth)"},
		{"ref depth", refChain(3), small,
			"a chain of 5 schemas evaluated at one place of the arguments (through $ref and in-place applicators) from /, at most 4 are allowed (schema_limits.max_ref_depth)"},
		{"in-place applicators count in the chain", `{"allOf":[{"anyOf":[{"oneOf":[{"not":{}}]}]}]}`, Limits{MaxRefDepth: 4},
			"a chain of 5 schemas evaluated at one place of the arguments (through $ref and in-place applicators) from /, at most 4 are allowed (schema_limits.max_ref_depth)"},
		{"patterns", `{"properties":{"a":{"pattern":"^[a-z]+$"}},"patternProperties":{"^x-[a-z0-9]+$":{}}}`, small,
			"regular expressions (pattern, patternProperties) of more than 20 in size, repetitions expanded (the one that crosses it at /patternProperties/^x-[a-z0-9]+$), at most 20 are allowed (schema_limits.max_pattern_size)"},
		{"a repetition counts expanded", `{"pattern":"a{1000}"}`, Limits{MaxPatternSize: 999},
			"regular expressions (pattern, patternProperties) of more than 999 in size, repetitions expanded (the one that crosses it at /pattern), at most 999 are allowed (schema_limits.max_pattern_size)"},
		{"the exponential $refs", doubling(20), Limits{},
			"more than 1000 schemas evaluated at one place of the arguments from /$defs/a12, $refs expanded, at most 1000 are allowed (schema_limits.max_subschemas)"},
		{"a $ref cycle that never descends", `{"$defs":{"a":{"$ref":"#/$defs/a"}}}`, Limits{},
			"the schema at /$defs/a applies itself again at the same place of the arguments through $ref, without end"},
		{"a longer cycle, through an applicator", `{"$ref":"#/$defs/a","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"$ref":"#"}}}`, Limits{},
			"the schema at / applies itself again at the same place of the arguments through $ref, without end"},
		{"a $ref into a value, which the library would compile unmeasured", `{"$ref":"#/default/0","default":[{"anyOf":[{},{}]}]}`, Limits{},
			`the $ref at / points at no subschema of this schema: "#/default/0"`},
		{"a $ref to nothing", `{"properties":{"p":{"$ref":"#/$defs/missing"}}}`, Limits{},
			`the $ref at /properties/p points at no subschema of this schema: "#/$defs/missing"`},
		{"a $ref that is no URI", `{"$ref":"%zz"}`, Limits{}, `the $ref at / is not a URI reference: "%zz"`},
		{"a number the library would take 25 ms and 415 KB to read", `{"properties":{"p":{"minimum":1e999999}}}`, Limits{},
			"a number beyond what the gateway reads at /properties/p/minimum (at most 100 digits, an exponent within ±400)"},
		{"a number of 101 digits in a value: its pointer is not quoted", `{"enum":[1,` + strings.Repeat("7", 101) + `]}`, Limits{},
			"a number beyond what the gateway reads at /enum/… (at most 100 digits, an exponent within ±400)"},
		{"a long name is cut", `{"properties":{"` + strings.Repeat("n", 500) + `":{"$ref":"#/nowhere"}}}`, Limits{},
			`the $ref at /properties/` + strings.Repeat("n", 128-len("/properties/")) + `… points at no subschema of this schema: "#/nowhere"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Measure([]byte(tt.schema), tt.limits)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.Less(t, len(err.Error()), 400, "bounded")
		})
	}
}

// TestMeasureNumbers: numbers as schemas write them pass, up to the bounds (float64's
// largest and smallest, 100 digits); one beyond either bound anywhere in the schema is
// refused, however its exponent is written.
func TestMeasureNumbers(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"0", "-1", "9223372036854775807", "1.7976931348623157e308", "4.9e-324", "1e400", "-1E-400",
		"1e+0000400", "1e00000000000000000000000001", strings.Repeat("9", 100), "0." + strings.Repeat("9", 99) + "e-400"} {
		_, err := Measure([]byte(`{"properties":{"p":{"maximum":`+n+`,"default":`+n+`}}}`), Limits{})
		assert.NoError(t, err, n)
	}
	for _, n := range []string{"1e401", "-1E-401", "1e+0000401", "1e99999999999999999999", strings.Repeat("9", 101), "0." + strings.Repeat("0", 100)} {
		for _, schema := range []string{`{"maximum":` + n + `}`, `{"examples":[{"a":[` + n + `]}]}`, `{"x-anything":` + n + `}`} {
			_, err := Measure([]byte(schema), Limits{})
			assert.ErrorContains(t, err, "a number beyond what the gateway reads", schema)
		}
	}
}

// TestMeasureRecursion: schemas that refer to themselves while descending into the
// arguments (a tree, a linked list) are what $ref is for; a cycle at one place is not.
func TestMeasureRecursion(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{
		`{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}}}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"additionalProperties":{"$ref":"#/$defs/a"}}}}`,
		refChain(28), // 30 schemas at one place
		doubling(7),  // 510 schemas at one place
	} {
		size, err := Measure([]byte(schema), Limits{})
		assert.NoError(t, err, schema)
		assert.LessOrEqual(t, size.RefDepth, 32)
	}
	size, err := Measure([]byte(doubling(7)), Limits{})
	require.NoError(t, err)
	assert.Equal(t, 510, size.Evaluated, "every path counted: a $ref used twice is evaluated twice")
	assert.Equal(t, 16, size.RefDepth, "the root, a0, its anyOf's first member, a1, … a7")
}

// TestMeasureDraft07: the draft-07 keywords that hold schemas are read as schemas, so
// their $refs resolve and their subschemas count.
func TestMeasureDraft07(t *testing.T) {
	t.Parallel()
	size, err := Measure([]byte(deploy07), Limits{})
	require.NoError(t, err)
	assert.Equal(t, Size{Bytes: len(deploy07), Subschemas: 11, Members: 6, Depth: 3, RefDepth: 2, Evaluated: 2, Values: 38, PointerBytes: 250}, size)

	for _, tt := range []struct{ name, schema, want string }{
		{"definitions", `{"definitions":{"a":{"$ref":"#/definitions/a"}}}`, "the schema at /definitions/a applies itself again"},
		{"dependencies are in place", `{"dependencies":{"x":["y"],"a":{"$ref":"#"}}}`, "the schema at / applies itself again"},
		{"list-form items", `{"items":[{},{"$ref":"#/items/1"}]}`, "the schema at /items/1 applies itself again"},
		{"additionalItems", `{"additionalItems":{"$ref":"#/additionalItems"}}`, "the schema at /additionalItems applies itself again"},
		{"draft-07 anchors", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$id":"#a","allOf":[{"$ref":"#a"}]}}}`,
			"the schema at /definitions/a applies itself again"},
		{"draft-04 ids", `{"$schema":"http://json-schema.org/draft-04/schema#","definitions":{"a":{"id":"a.json","not":{"$ref":"a.json"}}}}`,
			"the schema at /definitions/a applies itself again"},
		{"2020 ids and anchors", `{"$defs":{"a":{"$id":"https://x.example/a","$defs":{"b":{"$anchor":"b","$ref":"a#b"}}}}}`,
			"the schema at /$defs/a/$defs/b applies itself again"},
		{"a dynamic reference", `{"$dynamicAnchor":"meta","anyOf":[{"$dynamicRef":"#meta"}]}`, "the schema at / applies itself again"},
	} {
		_, err := Measure([]byte(tt.schema), Limits{})
		if assert.Error(t, err, tt.name) {
			assert.Contains(t, err.Error(), tt.want, tt.name)
		}
	}
}

// TestMeasureRealSchemas: the tool schemas clients send are far within the limits. The
// largest, a Kubernetes Deployment's (testdata/deployment.json: apps/v1 Deployment and the
// 112 definitions it refers to, from Kubernetes' OpenAPI v3 document, as $defs), passes;
// inlined, without its descriptions (testdata/deployment-inline.json), it has more
// subschemas than the default allows, and passes with max_subschemas 2000 and max_bytes
// 512 KiB, for its subschemas' pointers.
func TestMeasureRealSchemas(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{savePolicy, deploy2020, deploy07} {
		_, err := Measure([]byte(schema), Limits{})
		assert.NoError(t, err)
	}
	deployment, err := os.ReadFile("testdata/deployment.json")
	require.NoError(t, err)
	size, err := Measure(deployment, Limits{})
	require.NoError(t, err)
	assert.Equal(t, Size{Bytes: 175676, Subschemas: 871, Members: 112, Depth: 5, RefDepth: 4, Evaluated: 5, Values: 2927, Objects: 64,
		PointerBytes: 55618, NumberDigits: 8}, size)

	inline, err := os.ReadFile("testdata/deployment-inline.json")
	require.NoError(t, err)
	_, err = Measure(inline, Limits{})
	assert.ErrorContains(t, err, "more than 1000 subschemas")
	size, err = Measure(inline, Limits{MaxSubschemas: 2000, MaxBytes: 512 << 10})
	require.NoError(t, err)
	assert.Equal(t, 1721, size.Subschemas)
	assert.Equal(t, 25, size.Depth)
}

// TestMeasureLeavesWhatIsNotJSON: text that is not JSON passes the measure; the translator
// refuses it in its own words.
func TestMeasureLeavesWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	for _, text := range []string{``, `{`, `{"type":`, `{"properties":{"a":}}`, `[1,2`, `{"a":1}}`, "\x00"} {
		_, err := Measure([]byte(text), Limits{})
		assert.NoError(t, err, "%q", text)
	}
}

// TestMeasureLeavesOtherDocuments: a $ref to another document is the compiler's to refuse
// (it loads nothing); one that names this document by its URL or its $id is followed.
func TestMeasureLeavesOtherDocuments(t *testing.T) {
	t.Parallel()
	_, err := Measure([]byte(`{"properties":{"p":{"$ref":"https://example.com/p.json"},"q":{"$ref":"q.json#/x"}}}`), Limits{})
	assert.NoError(t, err)
	_, err = Measure([]byte(`{"$defs":{"a":{"$ref":"parameters.json#/$defs/a"}}}`), Limits{})
	assert.ErrorContains(t, err, "applies itself again", "the gateway's own URL for the schema")
	_, err = Measure([]byte(`{"$id":"https://x.example/s","$defs":{"a":{"$ref":"https://x.example/s#/$defs/a"}}}`), Limits{})
	assert.ErrorContains(t, err, "applies itself again", "the schema's own $id")
}

// largest are the largest schemas of each shape within DefaultLimits.
func largest() []struct{ name, schema string } {
	var nested strings.Builder // 999 arrays of 120 numbers: the most decoded values
	nested.WriteString(`{"type":"object","properties":{"e":{"enum":[`)
	for i := range 999 {
		if i > 0 {
			nested.WriteByte(',')
		}
		nested.WriteString("[" + strings.Repeat("1,", 125) + "1]")
	}
	nested.WriteString(`]}}}`)
	var patterns strings.Builder // 16 KiB of regular expressions
	patterns.WriteString(`{"type":"object","patternProperties":{`)
	for i := range 45 {
		if i > 0 {
			patterns.WriteByte(',')
		}
		fmt.Fprintf(&patterns, `"^p%02d(%s)+$":{"type":"string","pattern":"^[a-z]{1,20}(-[a-z0-9]{1,20})*$"}`, i, strings.Repeat("a|", 78)+"b")
	}
	patterns.WriteString(`}}`)
	var objects strings.Builder // 999 lists of 30 small objects: the most maps
	objects.WriteString(`{"type":"object","properties":{"e":{"enum":[`)
	for i := range 999 {
		if i > 0 {
			objects.WriteByte(',')
		}
		objects.WriteString("[" + strings.Repeat(`{"a":1},`, 30) + `{"a":1}]`)
	}
	objects.WriteString(`]}}}`)
	numbers := func(n int, number string) string { // n properties, each with 5 numbers the library keeps as big.Rat
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"minimum":%[2]s,"maximum":%[2]s,"exclusiveMinimum":%[2]s,"exclusiveMaximum":%[2]s,"multipleOf":%[2]s}`, i, number)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	longName := `{"type":"object","properties":{"` + strings.Repeat("n", 240) + `":{"anyOf":[{}` + strings.Repeat(`,{}`, 990) + `]}}}`
	var deep strings.Builder // 32 levels of properties, 32 of them at each
	deep.WriteString(`{"type":"object","properties":{`)
	for i := range 30 {
		for j := range 31 {
			fmt.Fprintf(&deep, `"p%d_%d":{"type":"string","minLength":1},`, i, j)
		}
		deep.WriteString(`"next":{"type":"object","properties":{`)
	}
	deep.WriteString(`"leaf":{"type":"integer"}` + strings.Repeat("}}", 30) + `}}`)
	return []struct{ name, schema string }{
		{"anyOf", anyOfShape(999)},
		{"properties", mapShape("properties", 998)},
		{"patternProperties", mapShape("patternProperties", 998)},
		{"$ref chain", refChain(30)},
		{"doubling $refs", doubling(7)},
		{"enum", enumShape(1000, 260)},
		{"nested values", nested.String()},
		{"objects", objects.String()},
		{"patterns", patterns.String()},
		{"deep", deep.String()},
		{"long names", longName},
		{"numbers", numbers(998, "1e-400")},
		{"long numbers", numbers(420, "0."+strings.Repeat("9", 99)+"e-400")},
	}
}

// BenchmarkMeasure is the measure of the largest schemas within the limits, of the
// attacks of the security review (each refused at the first limit it crosses), and of
// 10 MB of schema with max_bytes raised to take it.
func BenchmarkMeasure(b *testing.B) {
	type bench struct {
		name, schema string
		limits       Limits
	}
	var benches []bench
	for _, s := range largest() {
		benches = append(benches, bench{"largest/" + s.name, s.schema, Limits{}})
	}
	huge := 10 << 20
	benches = append(benches,
		bench{"attack/anyOf-40000", anyOfShape(40000), Limits{}},
		bench{"attack/properties-20000", mapShape("properties", 20000), Limits{}},
		bench{"attack/ref-chain-20000", refChain(20000), Limits{}},
		bench{"attack/enum-3MB", enumShape(12000, 260), Limits{}},
		bench{"10MB/anyOf", anyOfShape(huge / 3), Limits{MaxBytes: huge + 100}},
		bench{"10MB/description", `{"type":"object","description":"` + strings.Repeat("x", huge) + `"}`, Limits{MaxBytes: huge + 100}},
	)
	for _, bm := range benches {
		b.Run(bm.name, func(b *testing.B) {
			source := []byte(bm.schema)
			b.SetBytes(int64(len(source)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Measure(source, bm.limits)
			}
		})
	}
}

// FuzzMeasure: no text panics the measure, and what it accepts is within the limits.
func FuzzMeasure(f *testing.F) {
	for _, seed := range []string{savePolicy, deploy2020, deploy07, refChain(3), doubling(3), anyOfShape(3),
		`{"$defs":{"a":{"$ref":"#/$defs/a"}}}`, `{"$id":"https://x.example/s","$defs":{"a":{"$anchor":"a","$ref":"s#a"}}}`,
		`{"$dynamicAnchor":"m","items":{"$dynamicRef":"#m"}}`, `{"patternProperties":{"a{1000}":{}}}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		size, err := Measure([]byte(schema), small)
		if err != nil {
			return
		}
		if size.Subschemas > small.MaxSubschemas || size.Members > small.MaxMembers || size.Depth > small.MaxDepth ||
			size.RefDepth > small.MaxRefDepth || size.Evaluated > small.MaxSubschemas || size.PatternSize > small.MaxPatternSize ||
			size.PointerBytes > small.MaxBytes {
			t.Fatalf("accepted over the limits: %+v", size)
		}
	})
}

// TestSettingsListEveryLimit: Settings, the one list of the limits by name that the
// configuration and OrDefaults read, names each field of Limits once.
func TestSettingsListEveryLimit(t *testing.T) {
	t.Parallel()
	var l Limits
	fields := reflect.ValueOf(&l).Elem()
	settings := l.Settings()
	require.Len(t, settings, fields.NumField())
	for i := range fields.NumField() {
		ptr := fields.Field(i).Addr().Interface().(*int)
		assert.True(t, slices.ContainsFunc(settings, func(s Setting) bool { return s.Value == ptr }), fields.Type().Field(i).Name)
	}
	assert.Equal(t, Limits{MaxBytes: 1, MaxSubschemas: 2, MaxMembers: 3, MaxDepth: 4, MaxRefDepth: 5, MaxPatternSize: 6, CompileBudget: 7},
		Limits{MaxBytes: 1, MaxSubschemas: 2, MaxMembers: 3, MaxDepth: 4, MaxRefDepth: 5, MaxPatternSize: 6, CompileBudget: 7}.OrDefaults())
	assert.Equal(t, DefaultLimits, Limits{}.OrDefaults())
}
