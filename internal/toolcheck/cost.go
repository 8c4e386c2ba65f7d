package toolcheck

import "errors"

// What a check costs. The limits bound what is evaluated at one place of the arguments, but
// not how that multiplies from one place to the next: a schema whose object applies two
// schemas to its member x, each referring back to the root ({"allOf":[{"properties":{"x":
// {"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}), is evaluated 2^d times at depth d
// of arguments that nest x in x: 95 bytes of schema and 100 of arguments took the library
// a second at depth 18, and each level more doubles it. Whether a schema can do that for
// some arguments is a hard question of its structure; for the arguments at hand it is a
// count. So before the library validates a call, the schemas it would evaluate are counted
// from the graph of where each subschema applies, each (subschema, place) once, and a call
// that would cost more than maxEvaluations is not checked.

// maxEvaluations bounds the schemas one check may evaluate (the library takes 250 to 700 ns
// for each on the 2-core development VM: 100,000 are 25 to 70 ms). A call of a tool with a
// Kubernetes Deployment's schema, every field of it filled, evaluates a few thousand.
const maxEvaluations = 100_000

// ErrTooCostly is Check's error for arguments whose check would evaluate more than
// maxEvaluations schemas: the call is not checked.
var ErrTooCostly = errors.New("checking these arguments would evaluate more than 100000 schemas")

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
}

// graph is the graph of what the measure read.
func (m *measure) graph() *graph {
	n := len(m.nodes)
	g := &graph{inPlace: make([][]int32, n), choices: make([][][]int32, n), named: make([]map[string][]int32, n),
		members: make([][]int32, n), names: make([][]int32, n), items: make([][]int32, n)}
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
	return g
}

// place is a place in the arguments that has places below it: an object or an array. A
// nil *place is a scalar, or a member's name.
type place struct {
	id    int32
	array bool
	keys  []string // an object's member names
	below []*place // its members' values, in keys' order, or its items
}

// places numbers the places of a decoded value.
func places(v any, next *int32) *place {
	var p *place
	switch v := v.(type) {
	case map[string]any:
		p = &place{keys: make([]string, 0, len(v)), below: make([]*place, 0, len(v))}
		for k, x := range v {
			p.keys = append(p.keys, k)
			p.below = append(p.below, places(x, next))
		}
	case []any:
		p = &place{array: true, below: make([]*place, 0, len(v))}
		for _, x := range v {
			p.below = append(p.below, places(x, next))
		}
	default:
		return nil
	}
	p.id = *next
	*next++
	return p
}

// evaluations counts, up to maxEvaluations+1, the schemas the validator may evaluate for
// arguments v: at each place, each schema that applies there, with its in-place
// applications, and those that apply below it. Every applicator's branches count, as
// though none short-circuited, so the count is a bound. Each (subschema, place) is counted
// once and its count kept, so the counting costs no more than the places and subschemas
// it meets, even when the total is astronomic.
func (g *graph) evaluations(v any) int {
	var next int32
	c := counter{g: g, memo: map[[2]int32]int{}}
	return c.count(0, places(v, &next))
}

type counter struct {
	g    *graph
	memo map[[2]int32]int
	// work counts the applications followed; the count is at least as large.
	work int
}

func (c *counter) count(n int32, p *place) int {
	const over = maxEvaluations + 1
	key := [2]int32{n, -1}
	if p != nil {
		key[1] = p.id
	}
	if total, ok := c.memo[key]; ok {
		return total
	}
	total := 1
	add := func(to int32, at *place) {
		if c.work++; c.work > maxEvaluations || total >= over {
			total = over
			return
		}
		total = min(total+c.count(to, at), over)
	}
	for _, to := range c.g.inPlace[n] {
		add(to, p)
	}
	for _, choice := range c.g.choices[n] { // the validator evaluates one: the costliest counts
		best := 0
		for _, to := range choice {
			if c.work++; c.work > maxEvaluations {
				return over
			}
			best = max(best, c.count(to, p))
		}
		total = min(total+best, over)
	}
	if p != nil && p.array {
		for _, item := range p.below {
			for _, to := range c.g.items[n] {
				add(to, item)
			}
		}
	} else if p != nil {
		for i, name := range p.keys {
			for _, to := range c.g.named[n][name] {
				add(to, p.below[i])
			}
			for _, to := range c.g.members[n] {
				add(to, p.below[i])
			}
			for _, to := range c.g.names[n] {
				add(to, nil)
			}
		}
	}
	c.memo[key] = total
	return total
}
