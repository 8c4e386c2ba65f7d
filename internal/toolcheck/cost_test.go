package toolcheck

import (
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
// not multiply are checked whatever their arguments' size.
func TestCheckCostIsBounded(t *testing.T) {
	t.Parallel()
	c := NewCache(0, 0, Limits{})

	doubling := mustSchema(t, c, `{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`)
	assert.Empty(t, check(t, doubling, nested(8)), "2^8 evaluations: checked")
	_, err := doubling.Check(nested(40))
	assert.ErrorIs(t, err, ErrTooCostly, "2^40: not checked")

	var chain strings.Builder // no recursion: 30 $defs, each applying the next twice to x
	chain.WriteString(`{"$ref":"#/$defs/a0","$defs":{`)
	for i := range 30 {
		chain.WriteString(`"a` + strconv.Itoa(i) + `":{"allOf":[{"properties":{"x":{"$ref":"#/$defs/a` + strconv.Itoa(i+1) + `"}}},{"properties":{"x":{"$ref":"#/$defs/a` + strconv.Itoa(i+1) + `"}}}]},`)
	}
	chain.WriteString(`"a30":{"type":"object"}}}`)
	dag := mustSchema(t, c, chain.String())
	assert.Empty(t, check(t, dag, nested(5)))
	_, err = dag.Check(nested(30))
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
	deep := strings.Repeat(`{"and":[{"field":"a","equals":1},{"or":[`, 200) + `{"field":"z"}` + strings.Repeat(`]}]}`, 200)
	assert.Empty(t, check(t, filter, deep), "200 levels of and/or")
}

// BenchmarkCheckCost is what counting costs when it refuses: arguments 40 deep against the
// doubling schema, 2^40 evaluations for the library.
func BenchmarkCheckCost(b *testing.B) {
	s := mustSchema(b, NewCache(0, 0, Limits{}), `{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`)
	args := nested(40)
	b.ReportAllocs()
	for b.Loop() {
		_, err := s.Check(args)
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
		v, err := decode([]byte(args))
		require.NoError(t, err)
		assert.Less(t, s.g.evaluations(v), 200, schema)
		assert.Empty(t, check(t, s, args), schema)
	}
	size, err := Measure([]byte(`{"$dynamicAnchor":"a","anyOf":[{"$defs":{"b":{"$dynamicAnchor":"a","type":"object"}}},{"items":{"$dynamicRef":"#a"}}]}`), Limits{})
	require.NoError(t, err)
	assert.Equal(t, 4, size.Evaluated, "at an item: the items schema, then the root and its anyOf's two members (3) rather than b (1)")
}
