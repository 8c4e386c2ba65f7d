package toolcheck

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nested is {"x":{"x":…{}}}, depth deep.
func nested(depth int) string {
	return strings.Repeat(`{"x":`, depth) + `{}` + strings.Repeat(`}`, depth)
}

// TestCheckCostIsBounded: schemas within every limit whose evaluation multiplies from one
// place of the arguments to the next (through recursion, or a chain of $defs) are checked
// while their arguments are shallow and not checked (ErrTooCostly) once they would cost
// more than a check may, however deep: the count stops early. Recursive schemas that do
// not multiply are checked on arguments of thousands of places, up to maxArgumentDepth.
func TestCheckCostIsBounded(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})

	doubling := mustSchema(t, c, `{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`)
	assert.Empty(t, check(t, doubling, nested(8)), "2^8 evaluations: checked")
	_, err := doubling.Check(nested(40), nil)
	assert.ErrorIs(t, err, ErrTooCostly, "2^40: not checked")

	var chain strings.Builder // no recursion: 30 $defs, each applying the next twice to x
	chain.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range 30 {
		chain.WriteString(`"a` + strconv.Itoa(i) + `":{"allOf":[{"properties":{"x":{"$ref":"#/$defs/a` + strconv.Itoa(i+1) + `"}}},{"properties":{"x":{"$ref":"#/$defs/a` + strconv.Itoa(i+1) + `"}}}]},`)
	}
	chain.WriteString(`"a30":{"type":"object"}}}`)
	dag := mustSchema(t, c, chain.String())
	assert.Empty(t, check(t, dag, nested(5)))
	_, err = dag.Check(nested(30), nil)
	assert.ErrorIs(t, err, ErrTooCostly)

	// A binary tree and a filter language: recursion that does not multiply, checked on
	// arguments of thousands of places.
	tree := mustSchema(t, c, `{"type":"object","properties":{"v":{"type":"integer"},"left":{"$ref":"#"},"right":{"$ref":"#"}}}`)
	var full func(int) string
	full = func(d int) string {
		if d == 0 {
			return `{"v":1}`
		}
		return `{"v":1,"left":` + full(d-1) + `,"right":` + full(d-1) + `}`
	}
	assert.Empty(t, check(t, tree, full(11)), "4,095 objects")
	filter := mustSchema(t, c, `{"$ref":"#/$defs/f","$defs":{"f":{"anyOf":[`+
		`{"type":"object","properties":{"and":{"type":"array","items":{"$ref":"#/$defs/f"}}},"required":["and"]},`+
		`{"type":"object","properties":{"or":{"type":"array","items":{"$ref":"#/$defs/f"}}},"required":["or"]},`+
		`{"type":"object","properties":{"field":{"type":"string"},"equals":{}},"required":["field"]}]}}}`)
	deep := strings.Repeat(`{"and":[{"field":"a","equals":1},{"or":[`, 15) + `{"field":"z"}` + strings.Repeat(`]}]}`, 15)
	assert.Empty(t, check(t, filter, deep), "15 levels of and/or, 61 deep")

	assert.Empty(t, check(t, tree, nested(maxArgumentDepth-1)), "as deep as a check reads")
	_, err = tree.Check(nested(maxArgumentDepth), nil)
	assert.ErrorIs(t, err, ErrTooCostly)
	assert.EqualError(t, err, "checking these arguments would cost more than a check may: the arguments nest more than 64 deep")
}

// TestCheckCostIsWeighed: the attacks of the security review, each a schema within the
// limits and arguments that made one check cost the library seconds in a few thousand
// evaluations or fewer, are not checked (ErrTooCostly); the same schemas check arguments
// of an ordinary size. Each case goes through one weight of the cost model;
// BenchmarkCheckHostile shows what the costliest arguments within maxCost take.
func TestCheckCostIsWeighed(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	big := func(n int) string { return repeat(`%de999999`, n, ",") } // 25 ms each for the library to read
	for _, tt := range []struct {
		name, schema   string
		costly, cheap  string
		was, violation string
	}{
		{"numbers beyond the bounds", `{"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer"}}}}`,
			`{"ids":[` + big(100) + `]}`, `{"ids":[1,2,1e300]}`, "2.7 s", ""},
		{"uniqueItems of numbers beyond the bounds", `{"type":"object","properties":{"u":{"type":"array","uniqueItems":true}}}`,
			`{"u":[` + big(50) + `]}`, `{"u":[1,2,3,1]}`, "1.5 s", "/u: items must be unique; items 0 and 3 are equal"},
		{"an enum of 1,000 compared with each of 10,000 items", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + repeat(`%d`, 1000, ",") + `]}}}}`,
			`{"a":[` + repeat(`1000`, 10000, ",") + `]}`, `{"a":[1,2,3,1000]}`, "13.8 s", "/a/3: must be one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, …"},
		{"a requirement at every level, 9,000 deep", `{"type":"object","required":["y"],"properties":{"x":{"$ref":"#"}}}`,
			nested(9000), `{"y":1,"x":{"y":2,"x":{}}}`, "11 s", `/x/x: missing required property "y"`},
		{"a pattern of size 15,000 and a 50 KB string", `{"type":"object","properties":{"s":{"type":"string","pattern":"[ab]{1000}c|[ab]{1000}d|[ab]{1000}e|[ab]{1000}f|[ab]{1000}g"}}}`,
			`{"s":"` + strings.Repeat("ab", 25000) + `"}`, `{"s":"` + strings.Repeat("ab", 600) + `"}`, "0.5 s", "/s: must match the pattern"},
		{"unevaluatedProperties, 450 allOf branches and 8,000 members", `{"type":"object","unevaluatedProperties":false,"allOf":[` + repeat(`{"properties":{"q%d":true}}`, 450, ",") + `]}`,
			`{` + repeat(`"k%d":1`, 8000, ",") + `}`, `{"q1":1,"k":2}`, "1.3 s", "/k: not allowed"},
		{"a name matched against patternProperties of size 3,000", `{"type":"object","patternProperties":{"[ab]{1000}c":{}},"additionalProperties":false}`,
			`{"` + strings.Repeat("ab", 25000) + `":1}`, `{"x":1}`, "", "/x: property not allowed"},
		{"a 1 MB string at 998 schemas, each copying it", `{"type":"object","properties":{"s":{"anyOf":[` + repeat(`{"not":{}}`, 499, ",") + `]}}}`,
			`{"s":"` + strings.Repeat("x", 1<<20) + `"}`, `{"s":"x"}`, "0.36 s", "/s: must match at least one schema of anyOf"},
		{"1,000 required names at each of 10,000 objects", `{"type":"object","properties":{"a":{"type":"array","items":{"required":[` + repeat(`"r%d"`, 1000, ",") + `]}}}}`,
			`{"a":[` + repeat(`{}`, 10000, ",") + `]}`, `{"a":[{}]}`, "", `/a/0: missing required property "r0"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustSchema(t, c, tt.schema)
			_, err := s.Check(tt.costly, nil)
			assert.ErrorIs(t, err, ErrTooCostly, "was %s", tt.was)
			got := check(t, s, tt.cheap)
			if tt.violation == "" {
				assert.Empty(t, got)
			} else if assert.NotEmpty(t, got) {
				assert.Contains(t, got[0], tt.violation)
			}
		})
	}
}

// BenchmarkCheckCost is what counting costs when it refuses: arguments 40 deep against the
// doubling schema, 2^40 evaluations for the library.
func BenchmarkCheckCost(b *testing.B) {
	s := mustSchema(b, NewCache(0, 0, Limits{}), `{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`)
	args := nested(40)
	b.ReportAllocs()
	for b.Loop() {
		_, err := s.Check(args, nil)
		require.ErrorIs(b, err, ErrTooCostly)
	}
}

// TestDynamicReferencesCountOnce: a $dynamicRef or $recursiveRef leads to one schema of
// those declaring its anchor, chosen along the validator's path, so a tree written with
// one is counted as the same tree written with $ref: one schema a level, checked 40 deep
// (the target was counted twice a level: 2^16 from 16 deep). With two declarations, the
// costlier counts, not both.
func TestDynamicReferencesCountOnce(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	args := strings.Repeat(`{"child":`, 40) + `{}` + strings.Repeat(`}`, 40)
	for _, schema := range []string{
		`{"$id":"https://x.invalid/tree","type":"object","properties":{"child":{"$ref":"#"}}}`,
		`{"$id":"https://x.invalid/tree","$dynamicAnchor":"node","type":"object","properties":{"child":{"$dynamicRef":"#node"}}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","$id":"https://x.invalid/tree","$recursiveAnchor":true,"type":"object","properties":{"child":{"$recursiveRef":"#"}}}`,
		`{"$id":"https://x.invalid/strict","$dynamicAnchor":"node","$ref":"tree","unevaluatedProperties":false,"$defs":{"tree":{"$id":"tree",` +
			`"$dynamicAnchor":"node","type":"object","properties":{"child":{"$dynamicRef":"#node"}}}}}`,
	} {
		s := mustSchema(t, c, schema)
		v, err := decode([]byte(args), maxArgumentDepth)
		require.NoError(t, err)
		assert.Less(t, s.g.cost(v), 400, schema) // a few units a level; doubling, it was over maxCost from 16 deep
		assert.Empty(t, check(t, s, args), schema)
	}
	size, err := Measure([]byte(`{"$dynamicAnchor":"a","anyOf":[{"$defs":{"b":{"$dynamicAnchor":"a","type":"object"}}},{"items":{"$dynamicRef":"#a"}}]}`), Limits{})
	require.NoError(t, err)
	assert.Equal(t, 4, size.Evaluated, "at an item: the items schema, then the root and its anyOf's two members (3) rather than b (1)")
}

// repeat joins n copies of item, each with %d replaced by its index and %d+ by the next.
func repeat(item string, n int, sep string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(item, "%d+", fmt.Sprint(i+1)), "%d", fmt.Sprint(i))
	}
	return strings.Join(parts, sep)
}

// bigNumber is the costliest number to read within numberBounds.
var bigNumber = "0." + strings.Repeat("9", 99) + "e-400"

// hostile are schemas, each with arguments of size n that are costly through one weight of
// the cost model (weight), and the library's cost before it was weighed.
func hostile() []struct {
	name, schema string
	args         func(n int) string
} {
	nested := func(depth int, inner string) string {
		return strings.Repeat(`{"x":`, depth) + inner + strings.Repeat(`}`, depth)
	}
	return []struct {
		name, schema string
		args         func(n int) string
	}{
		{"plain: items of the wrong type", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
			func(n int) string { return `{"a":[` + repeat(`1`, n, ",") + `]}` }},
		{"plain: 62 deep, items of the wrong type", `{"type":"object","properties":{"x":{"$ref":"#"},"a":{"type":"array","items":{"type":"string"}}}}`,
			func(n int) string { return nested(62, `{"a":[`+repeat(`1`, n, ",")+`]}`) }},
		{"enum of 1000 numbers", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + repeat(`%d`, 1000, ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + repeat(`1000`, n, ",") + `]}` }},
		{"enum of 1000 strings", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + repeat(`"%d"`, 1000, ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + repeat(`"1000"`, n, ",") + `]}` }},
		{"enum of 1000 large numbers", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + repeat(bigNumber, 1000, ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + repeat(`1`+bigNumber[1:], n, ",") + `]}` }},
		{"enum of 100 objects", `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[` + repeat(`{"a":[1,2,3,4,5,6,7,"%d"]}`, 100, ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + repeat(`{"a":[1,2,3,4,5,6,7,"x"]}`, n, ",") + `]}` }},
		{"integer, large numbers", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}}`,
			func(n int) string { return `{"a":[` + repeat(bigNumber, n, ",") + `]}` }},
		{"multipleOf, large numbers", `{"type":"object","properties":{"a":{"type":"array","items":{"multipleOf":` + bigNumber + `,"minimum":` + bigNumber + `}}}}`,
			func(n int) string { return `{"a":[` + repeat(`0.7`+bigNumber[3:], n, ",") + `]}` }},
		{"uniqueItems, large numbers", `{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`,
			func(n int) string { return `{"a":[` + repeat(`0.%d`+strings.Repeat("9", 90)+`e-400`, n, ",") + `]}` }},
		{"uniqueItems, 20 long arrays", `{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`,
			func(n int) string { return `{"a":[` + repeat(`[`+repeat(`1`, n, ",")+`,%d]`, 20, ",") + `]}` }},
		{"pattern of size 3000", `{"type":"object","properties":{"s":{"type":"string","pattern":"[ab]{1000}c"}}}`,
			func(n int) string { return `{"s":"` + strings.Repeat("ab", n/2) + `"}` }},
		{"pattern of size 16000", `{"type":"object","properties":{"s":{"type":"string","pattern":"[ab]{1000}c|[ab]{1000}d|[ab]{1000}e|[ab]{1000}f|[ab]{1000}g"}}}`,
			func(n int) string { return `{"s":"` + strings.Repeat("ab", n/2) + `"}` }},
		{"a small pattern", `{"type":"object","properties":{"s":{"type":"array","items":{"type":"string","pattern":"^[a-z]+(-[a-z0-9]+)*$"}}}}`,
			func(n int) string { return `{"s":["` + strings.Repeat("ab", n/2) + `-"]}` }},
		{"patternProperties of size 3000", `{"type":"object","patternProperties":{"[ab]{1000}c":{}}}`,
			func(n int) string { return `{"` + strings.Repeat("ab", n/2) + `":1}` }},
		{"propertyNames pattern", `{"type":"object","propertyNames":{"pattern":"[ab]{1000}c"}}`,
			func(n int) string { return `{"` + strings.Repeat("ab", n/2) + `":1}` }},
		{"minLength in anyOf of 998", `{"type":"object","properties":{"s":{"anyOf":[` + repeat(`{"minLength":1000000000}`, 998, ",") + `]}}}`,
			func(n int) string { return `{"s":"` + strings.Repeat("é", n/2) + `"}` }},
		{"a string in anyOf of 499 not", `{"type":"object","properties":{"s":{"anyOf":[` + repeat(`{"not":{}}`, 499, ",") + `]}}}`,
			func(n int) string { return `{"s":"` + strings.Repeat("x", n) + `"}` }},
		{"object members in anyOf of 999", `{"type":"object","anyOf":[` + repeat(`{"required":["r%d"]}`, 999, ",") + `]}`,
			func(n int) string { return `{` + repeat(`"k%d":1`, n, ",") + `}` }},
		{"long member names in anyOf of 499", `{"type":"object","anyOf":[` + repeat(`{"properties":{"p%d":{}}}`, 499, ",") + `]}`,
			func(n int) string { return `{"k` + strings.Repeat("x", n) + `":1}` }},
		{"unevaluatedProperties, allOf of 450", `{"type":"object","unevaluatedProperties":false,"allOf":[` + repeat(`{"properties":{"q%d":true}}`, 450, ",") + `]}`,
			func(n int) string { return `{` + repeat(`"k%d":1`, n, ",") + `}` }},
		{"required of 1000 names", `{"type":"object","properties":{"a":{"type":"array","items":{"required":[` + repeat(`"r%d"`, 1000, ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + repeat(`{}`, n, ",") + `]}` }},
		{"uniqueItems, long strings, anyOf of 998", `{"type":"object","properties":{"a":{"anyOf":[` + repeat(`{"uniqueItems":true,"minItems":21}`, 998, ",") + `]}}}`,
			func(n int) string { return `{"a":[` + repeat(`"`+strings.Repeat("x", n)+`%d"`, 20, ",") + `]}` }},
		{"additionalProperties false", `{"type":"object","additionalProperties":false}`,
			func(n int) string { return `{` + repeat(`"k%d":1`, n, ",") + `}` }},
		{"a $ref chain of 31 at each item", `{"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#/$defs/a0"}}},"$defs":{` +
			repeat(`"a%d":{"$ref":"#/$defs/a%d+"}`, 29, ",") + `,"a29":{"type":"string"}}}`,
			func(n int) string { return `{"a":[` + repeat(`1`, n, ",") + `]}` }},
		{"doubling $refs", `{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`,
			func(n int) string { return nested(min(n, 60), `{}`) }},
	}
}

// costliest is the largest n up to 1<<21 whose arguments cost at most maxCost to check
// against s.
func costliest(t testing.TB, s *Schema, args func(int) string) (int, int) {
	t.Helper()
	cost := func(n int) int {
		v, err := decode([]byte(args(n)), maxArgumentDepth)
		require.NoError(t, err)
		return s.g.cost(v)
	}
	lo, hi := 1, 1<<21
	for lo < hi {
		if mid := (lo + hi + 1) / 2; cost(mid) <= maxCost {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, cost(lo)
}

// BenchmarkCheckHostile checks, for each way arguments can make an evaluation costly,
// the costliest arguments a check accepts (just under maxCost): what one check may cost
// the gateway at most, per unit of the cost model (ns/unit, 250 to 700 for a plain
// evaluation).
func BenchmarkCheckHostile(b *testing.B) {
	c := NewCache(0, 0, Limits{})
	for _, h := range hostile() {
		b.Run(h.name, func(b *testing.B) {
			s := mustSchema(b, c, h.schema)
			n, cost := costliest(b, s, h.args)
			args := h.args(n)
			b.ReportAllocs()
			for b.Loop() {
				_, err := s.Check(args, nil)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(n), "n")
			b.ReportMetric(float64(cost), "units")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(cost), "ns/unit")
		})
	}
}

// TestRequestChecksShareOneBudget: a request's checks together cost at most what one check
// may: calls within it are checked until their costs add up to it, and the next call that
// would pass it is not checked (ErrTooCostly), so many calls in one answer, and repair
// attempts checking them again, cannot multiply one check's bound.
func TestRequestChecksShareOneBudget(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})
	doubling := mustSchema(t, c, `{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`)
	args := nested(10) // 2^10 places doubled: within one check's bound, about a sixth of it
	cost := doubling.g.cost(mustDecode(t, args))
	require.Greater(t, cost, maxCost/7)
	require.Less(t, cost, maxCost/5)
	b := NewBudget(Limits{})
	checked := 0
	for range 10 {
		if _, err := doubling.Check(args, b); err != nil {
			assert.ErrorIs(t, err, ErrTooCostly)
			break
		}
		checked++
	}
	assert.Equal(t, maxCost/cost, checked, "as many as the request's budget holds")
	_, err := doubling.Check(`{"x":{}}`, b)
	assert.NoError(t, err, "a cheap call still fits")
	_, err = doubling.Check(args, nil)
	assert.NoError(t, err, "without a request's budget, one check's bound alone")
}

func mustDecode(t *testing.T, text string) any {
	t.Helper()
	v, err := decode([]byte(text), maxArgumentDepth)
	require.NoError(t, err)
	return v
}
