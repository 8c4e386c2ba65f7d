package toolcheck

import (
	stdjson "encoding/json"
	"errors"
)

// What a check costs. The limits bound what is evaluated at one place of the arguments, but
// not how that multiplies from one place to the next: a schema whose object applies two
// schemas to its member x, each referring back to the root ({"allOf":[{"properties":{"x":
// {"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}), is evaluated 2^d times at depth d
// of arguments that nest x in x: 95 bytes of schema and 100 of arguments took the library
// a second at depth 18, and each level more doubles it. Whether a schema can do that for
// some arguments is a hard question of its structure; for the arguments at hand it is a
// count. So before the library validates a call, the schemas it would evaluate are counted
// from the graph of where each subschema applies, each (subschema, place) once.
//
// Nor do the limits bound what one evaluation costs, which the arguments choose as much as
// the schema: an enum of 1,000 numbers compared with each of 10,000 items (13.8 s for
// 10,002 evaluations), a pattern of size 15,000 matched against a 50 KB string (0.5 s for
// one), the 8,000 member names of an object copied for each of 450 allOf branches under
// unevaluatedProperties (1.3 s). So each evaluation weighs what the library does in it, by
// the subschema's keywords and the value at its place (weight), in units of a plain
// evaluation, and a call that would cost more than maxCost is not checked.

// maxCost bounds what one check may cost, in units of a plain evaluation of one subschema
// at one place: 250 ns on the 2-core development VM for one that passes, up to 900 for one
// that fails, whose error the library allocates. BenchmarkCheckHostile holds each weight
// to that: a check of the costliest arguments within maxCost through any one weight takes
// at most 43 ms (24 to 860 ns a unit). A call of a tool with a Kubernetes Deployment's
// schema, a Deployment of four containers filled in (7.8 KB), costs about 1,300.
const maxCost = 50_000

// ErrTooCostly is Check's error for arguments whose check would cost more than maxCost, or
// that are beyond what the gateway reads (maxArgumentDepth, numberBounds): the call is not
// checked.
var ErrTooCostly = errors.New("checking these arguments would cost more than a check may")

// What costs the library about one plain evaluation (BenchmarkCheckHostile): iterating 16
// members of an object (every schema evaluated at an object iterates its members);
// copying 2 names or items into the set unevaluatedProperties and unevaluatedItems keep,
// and comparing them with another's; hashing or comparing 4 KiB of strings (properties
// looks up each member name, uniqueItems hashes or compares an array's strings); comparing
// 16 enum or const values, or looking up 16 required names; hashing 16 values of an array
// (uniqueItems); reading a number into a math/big.Rat, one unit and one more for each 32
// digits and exponent; copying 1 KiB of a string (the library copies a string at every
// evaluation of a schema there), counting the characters of 256 bytes of one (minLength,
// maxLength, which copy it again); matching a regular expression (pattern,
// patternProperties) of size s against 128/s bytes, as Go's regexp may take time in the
// string's length times the expression's size; at a place 16 levels deep in the arguments,
// copying its location into an error (the library copies it for each).
const (
	membersPerUnit     = 16
	trackedPerUnit     = 2
	levelsPerUnit      = 16
	hashedBytesPerUnit = 4 << 10
	valuesPerUnit      = 16
	digitsPerUnit      = 32
	copiedBytesPerUnit = 1 << 10
	lengthBytesPerUnit = 256
	patternWorkPerUnit = 128
)

// work is what a subschema's keywords make the validator do at each of its evaluations
// that grows with the keywords or with the value at its place; Measure fills it in.
type work struct {
	// values counts the values of its enum and const (each compared with the value at its
	// place) and the names of its required, dependentRequired and dependencies (each looked
	// up in it).
	values int
	// numbers counts the numbers among its enum and const values, and digits adds up their
	// digits and exponents: compared with a number, each is read into a math/big.Rat, and
	// so is the number.
	numbers, digits int
	// reads: its type integer, minimum, maximum, exclusiveMinimum, exclusiveMaximum or
	// multipleOf read a number at its place into a math/big.Rat, and multipleOf divides.
	reads bool
	// length: its minLength or maxLength count a string's characters.
	length bool
	// pattern is its pattern's size, namePatterns the sizes of its patternProperties' added
	// up, each matched against every member's name (Measure's sizes, repetitions expanded).
	pattern, namePatterns int
	// unique: its uniqueItems hashes every value of an array and compares each pair of
	// items when there are at most 20.
	unique bool
	// unevaluated: it has unevaluatedProperties or unevaluatedItems. tracks: it is such a
	// schema or one that a such schema applies in place, for each of which the validator
	// copies the members or items of its place into a set (graph fills it in).
	unevaluated, tracks bool
}

// graph is where a schema's subschemas apply: in place, or one place down in the
// arguments. Nodes are Measure's subschemas, the root 0.
type graph struct {
	inPlace [][]int32
	// choices: in place, one schema of each list ($dynamicRef, $recursiveRef).
	choices [][][]int32
	// named: below an object, at the member a properties key names.
	named []map[string][]int32
	// members: at every member of an object (patternProperties, additionalProperties,
	// unevaluatedProperties: counted for every member, whether its name matches or not);
	// names: at every member's name (propertyNames); items: at every item of an array.
	members, names, items [][]int32
	// work is what each subschema's keywords cost at each evaluation.
	work []work
}

// graph is the graph of what the measure read.
func (m *measure) graph() *graph {
	n := len(m.nodes)
	g := &graph{inPlace: make([][]int32, n), choices: make([][][]int32, n), named: make([]map[string][]int32, n),
		members: make([][]int32, n), names: make([][]int32, n), items: make([][]int32, n), work: m.work}
	choice := int32(0)
	for _, e := range m.edges {
		switch {
		case e.choice == 0:
			g.inPlace[e.from] = append(g.inPlace[e.from], e.to)
		case e.choice != choice:
			g.choices[e.from] = append(g.choices[e.from], []int32{e.to})
		default:
			last := g.choices[e.from]
			last[len(last)-1] = append(last[len(last)-1], e.to)
		}
		choice = e.choice
	}
	for _, e := range m.below {
		switch e.at {
		case toNamed:
			if g.named[e.from] == nil {
				g.named[e.from] = map[string][]int32{}
			}
			g.named[e.from][e.name] = append(g.named[e.from][e.name], e.to)
		case toMembers:
			g.members[e.from] = append(g.members[e.from], e.to)
		case toNames:
			g.names[e.from] = append(g.names[e.from], e.to)
		case toItems:
			g.items[e.from] = append(g.items[e.from], e.to)
		}
	}
	for v := range int32(n) {
		if g.work[v].unevaluated {
			g.track(v)
		}
	}
	return g
}

// track marks v and what it applies in place as tracking unevaluated members or items.
func (g *graph) track(v int32) {
	if g.work[v].tracks {
		return
	}
	g.work[v].tracks = true
	for _, to := range g.inPlace[v] {
		g.track(to)
	}
	for _, choice := range g.choices[v] {
		for _, to := range choice {
			g.track(to)
		}
	}
}

// place is a place in the arguments that has places below it: an object or an array.
type place struct {
	id    int32
	array bool
	keys  []string // an object's member names
	// vals are its members' values, in keys' order, or its items; below their places, nil
	// for those that are neither objects nor arrays.
	vals  []any
	below []*place
	// values counts the values in it, itself included, numbers the numbers among them and
	// digits their digits and exponents, bytes the bytes of its strings and member names;
	// names adds up the bytes of its own members' names.
	values, numbers, digits, bytes, names int
}

// places numbers the places of a decoded value; nil for a value that is neither an object
// nor an array.
func places(v any, next *int32) *place {
	var p *place
	switch v := v.(type) {
	case map[string]any:
		p = &place{keys: make([]string, 0, len(v)), vals: make([]any, 0, len(v)), below: make([]*place, 0, len(v))}
		for k, x := range v {
			p.keys, p.vals = append(p.keys, k), append(p.vals, x)
			p.names += len(k)
		}
		p.bytes = p.names
	case []any:
		p = &place{array: true, vals: v, below: make([]*place, 0, len(v))}
	default:
		return nil
	}
	p.values = 1
	for _, x := range p.vals {
		below := places(x, next)
		p.below = append(p.below, below)
		switch x := x.(type) {
		case stdjson.Number:
			digits, exponent := numberSize(string(x))
			p.values, p.numbers, p.digits = p.values+1, p.numbers+1, p.digits+digits+exponent
		case string:
			p.values, p.bytes = p.values+1, p.bytes+len(x)
		case map[string]any, []any:
			p.values, p.numbers, p.digits, p.bytes = p.values+below.values, p.numbers+below.numbers, p.digits+below.digits, p.bytes+below.bytes
		default:
			p.values++
		}
	}
	p.id = *next
	*next++
	return p
}

// numberUnits is what reading a number into a math/big.Rat costs.
func numberUnits(n stdjson.Number) int {
	digits, exponent := numberSize(string(n))
	return 1 + (digits+exponent)/digitsPerUnit
}

// weight is what evaluating subschema n costs at value v, depth levels deep in the
// arguments (p its place when it is an object or an array), in units.
func (g *graph) weight(n int32, p *place, v any, depth int) int {
	w := &g.work[n]
	cost := 1 + depth/levelsPerUnit + w.values/valuesPerUnit
	switch v := v.(type) {
	case map[string]any:
		cost += len(v)/membersPerUnit + p.names/hashedBytesPerUnit + p.names*w.namePatterns/patternWorkPerUnit
		if w.tracks {
			cost += len(v) / trackedPerUnit
		}
	case []any:
		if w.unique {
			pairs := 1
			if len(v) <= 20 {
				pairs = len(v)
			}
			cost += pairs * (p.values/valuesPerUnit + p.numbers + p.digits/digitsPerUnit + p.bytes/hashedBytesPerUnit)
		}
		if w.tracks {
			cost += len(v) / trackedPerUnit
		}
	case string:
		cost += len(v)/copiedBytesPerUnit + len(v)*w.pattern/patternWorkPerUnit
		if w.length {
			cost += len(v) / lengthBytesPerUnit
		}
	case stdjson.Number:
		read := numberUnits(v)
		if w.reads {
			cost += 2 * read
		}
		cost += w.numbers*read + w.numbers + w.digits/digitsPerUnit
	}
	if p != nil && w.numbers > 0 { // an enum's or const's objects or arrays: their numbers and v's, compared
		cost += w.numbers*(2+p.digits/digitsPerUnit) + w.digits/digitsPerUnit
	}
	return cost
}

// cost counts, up to maxCost+1, what the validator may do for arguments v: at each place,
// each schema that applies there, with its in-place applications, and those that apply
// below it, each by its weight. Every applicator's branches count, as though none
// short-circuited, so the count is a bound. Each (subschema, object or array) is counted
// once and its count kept, so the counting costs no more than the places and subschemas
// it meets, even when the total is astronomic.
func (g *graph) cost(v any) int {
	var next int32
	c := counter{g: g, memo: map[[2]int32]int{}}
	return c.count(0, places(v, &next), v, 0)
}

type counter struct {
	g    *graph
	memo map[[2]int32]int
	// work counts the applications followed; the count is at least as large.
	work int
}

// count is what evaluating subschema n at v, depth levels deep, costs, p being v's place
// or nil.
func (c *counter) count(n int32, p *place, v any, depth int) int {
	const over = maxCost + 1
	if p != nil {
		if total, ok := c.memo[[2]int32{n, p.id}]; ok {
			return total
		}
	}
	total := min(c.g.weight(n, p, v, depth), over)
	follow := func() bool {
		c.work++
		return c.work <= maxCost && total < over
	}
	add := func(to int32, p *place, v any, depth int) {
		if !follow() {
			total = over
			return
		}
		total = min(total+c.count(to, p, v, depth), over)
	}
	for _, to := range c.g.inPlace[n] {
		add(to, p, v, depth)
	}
	for _, choice := range c.g.choices[n] { // the validator evaluates one: the costliest counts
		best := 0
		for _, to := range choice {
			if !follow() {
				return over
			}
			best = max(best, c.count(to, p, v, depth))
		}
		total = min(total+best, over)
	}
	switch {
	case p == nil:
		return total
	case p.array:
		for i, item := range p.vals {
			for _, to := range c.g.items[n] {
				add(to, p.below[i], item, depth+1)
			}
		}
	default:
		for i, name := range p.keys {
			for _, to := range c.g.named[n][name] {
				add(to, p.below[i], p.vals[i], depth+1)
			}
			for _, to := range c.g.members[n] {
				add(to, p.below[i], p.vals[i], depth+1)
			}
			for _, to := range c.g.names[n] {
				add(to, nil, name, depth+1)
			}
		}
	}
	c.memo[[2]int32{n, p.id}] = total
	return total
}
