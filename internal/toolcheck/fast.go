package toolcheck

import (
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path. Most calls are valid, and most tool schemas use only a few keywords: type,
// properties, required, additionalProperties true or false, items, enum of strings,
// integer bounds, string and array lengths, and annotations. For such a schema (fastNode)
// a call's arguments are read once, as tokens, and judged against those keywords as the
// library reads them, with what the check costs counted as cost.go counts it, without
// decoding them into Go values or running the library: a call judged valid there is valid
// to the library too, and costs the request's budget the same. Anything the fast path is
// not sure of (a violation, a number it does not compare exactly, a member named twice,
// invalid UTF-8, nesting or a number beyond what the gateway reads, a cost near the bound)
// sends the call to the library, which words the violations: the fast path never decides
// that a call is invalid, so the answers are the library's in every case
// (TestFastPathAgreesWithTheLibrary, FuzzFastPath).

// fastNode is a subschema the fast path judges by: its node in the graph of the schema
// (for what it costs), and the keywords the library compiled for it.
type fastNode struct {
	w     work
	never bool // the boolean schema false
	types types
	// enum is the enum, all strings; nil for none.
	enum map[string]struct{}
	// Integer bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum), by bit of has.
	bounds [4]int64
	has    uint8
	// minLen and maxLen bound a string's characters; minItems and maxItems an array's
	// items; -1 for none.
	minLen, maxLen, minItems, maxItems int
	// props are the properties' subschemas, each with its bit in a set of the members
	// present; required is the set of the required ones.
	props    map[string]fastProp
	required uint64
	// additional is additionalProperties: none, a boolean schema (whose work, extra, is
	// counted at every member, as cost.go counts it), or a schema (others) for an object
	// without properties, whose every member it judges.
	additional int8
	extra      work
	others     *fastNode
	items      *fastNode
}

type fastProp struct {
	node *fastNode
	bit  uint
}

const (
	additionalNone int8 = iota
	additionalTrue
	additionalFalse
	additionalSchema
)

// types is a set of JSON types, by bit; 0 takes any.
type types uint8

const (
	typeNull types = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeBits = map[string]types{"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject}

// maxFastProps bounds the properties of a schema the fast path takes: their set is a uint64.
const maxFastProps = 64

// newFast returns the fast path's tree of schema s, whose graph is g, or nil when s uses
// anything the fast path does not judge.
func newFast(s *jsonschema.Schema, g *graph) *fastNode {
	if s == nil || g == nil {
		return nil
	}
	n, ok := fastOf(s, g, 0)
	if !ok {
		return nil
	}
	return n
}

func fastOf(s *jsonschema.Schema, g *graph, id int32) (*fastNode, bool) {
	w := g.work[id]
	if len(g.inPlace[id]) > 0 || len(g.choices[id]) > 0 || len(g.names[id]) > 0 ||
		w.unique || w.unevaluated || w.tracks || w.namePatterns > 0 || w.pattern > 0 || w.numbers > 0 {
		return nil, false
	}
	n := &fastNode{w: w, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	if s.Bool != nil {
		n.never = !*s.Bool
		return n, len(g.named[id]) == 0 && len(g.members[id]) == 0 && len(g.items[id]) == 0
	}
	if s.Ref != nil || s.RecursiveRef != nil || s.DynamicRef != nil || s.Const != nil || s.Not != nil ||
		len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.If != nil || s.Then != nil || s.Else != nil ||
		s.MaxProperties != nil || s.MinProperties != nil || s.PropertyNames != nil || len(s.PatternProperties) > 0 ||
		len(s.Dependencies) > 0 || len(s.DependentRequired) > 0 || len(s.DependentSchemas) > 0 || s.UnevaluatedProperties != nil ||
		s.UniqueItems || s.Contains != nil || s.MinContains != nil || s.MaxContains != nil || s.AdditionalItems != nil ||
		len(s.PrefixItems) > 0 || s.UnevaluatedItems != nil || s.Pattern != nil || s.ContentEncoding != nil ||
		s.ContentMediaType != nil || s.ContentSchema != nil || s.MultipleOf != nil || len(s.Extensions) > 0 ||
		s.Format != nil && !slices.Contains(formats, s.Format.Name) {
		return nil, false
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			n.types |= typeBits[t]
		}
	}
	if s.Enum != nil {
		n.enum = make(map[string]struct{}, len(s.Enum.Values))
		for _, v := range s.Enum.Values {
			str, ok := v.(string)
			if !ok {
				return nil, false
			}
			n.enum[str] = struct{}{}
		}
	}
	for i, r := range [...]*big.Rat{s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum} {
		if r == nil {
			continue
		}
		if !r.IsInt() || !r.Num().IsInt64() {
			return nil, false
		}
		n.bounds[i], n.has = r.Num().Int64(), n.has|1<<i
	}
	for _, l := range [...]struct {
		from *int
		to   *int
	}{{s.MinLength, &n.minLen}, {s.MaxLength, &n.maxLen}, {s.MinItems, &n.minItems}, {s.MaxItems, &n.maxItems}} {
		if l.from != nil {
			*l.to = *l.from
		}
	}
	// Each property is one subschema, at the member it names (graph.named).
	if len(s.Properties) > maxFastProps || len(g.named[id]) != len(s.Properties) {
		return nil, false
	}
	if len(s.Properties) > 0 {
		n.props = make(map[string]fastProp, len(s.Properties))
	}
	for _, name := range sortedKeys(s.Properties) {
		ids := g.named[id][name]
		if len(ids) != 1 {
			return nil, false
		}
		child, ok := fastOf(s.Properties[name], g, ids[0])
		if !ok {
			return nil, false
		}
		n.props[name] = fastProp{node: child, bit: uint(len(n.props))}
	}
	for _, name := range s.Required {
		p, ok := n.props[name]
		if !ok {
			return nil, false // a required member the schema says nothing else of: left to the library
		}
		n.required |= 1 << p.bit
	}
	// additionalProperties: a boolean schema, applied at every member (graph.members).
	switch a := s.AdditionalProperties.(type) {
	case nil:
		if len(g.members[id]) != 0 {
			return nil, false
		}
	case bool:
		if len(g.members[id]) != 1 {
			return nil, false
		}
		n.additional, n.extra = additionalFalse, g.work[g.members[id][0]]
		if a {
			n.additional = additionalTrue
		}
	case *jsonschema.Schema:
		// With properties, cost.go counts it at their members too, where the library does
		// not apply it: left to the library.
		if len(g.members[id]) != 1 || len(s.Properties) > 0 {
			return nil, false
		}
		child, ok := fastOf(a, g, g.members[id][0])
		if !ok {
			return nil, false
		}
		n.additional, n.others = additionalSchema, child
	default:
		return nil, false
	}
	// items: one subschema, at every item (graph.items).
	var items *jsonschema.Schema
	switch it := s.Items.(type) {
	case nil:
		items = s.Items2020
	case *jsonschema.Schema:
		items = it
	default:
		return nil, false
	}
	switch {
	case items == nil && len(g.items[id]) != 0, items != nil && len(g.items[id]) != 1:
		return nil, false
	case items != nil:
		child, ok := fastOf(items, g, g.items[id][0])
		if !ok {
			return nil, false
		}
		n.items = child
	}
	return n, true
}

// retained estimates the memory the tree keeps: each node, its maps' entries and their
// buckets (names and enum values are the library's strings, shared).
func (n *fastNode) retained() int {
	if n == nil {
		return 0
	}
	size := int(unsafe.Sizeof(*n))
	if n.enum != nil {
		size += 256 + 48*len(n.enum)
	}
	if n.props != nil {
		size += 256 + 64*len(n.props)
	}
	for _, p := range n.props {
		size += p.node.retained()
	}
	return size + n.others.retained() + n.items.retained()
}

func sortedKeys(m map[string]*jsonschema.Schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fastReader reads one call's arguments for the fast path; pooled, so a check allocates
// nothing. Its decoder takes no member named twice and no invalid UTF-8: those are left to
// the library.
type fastReader struct {
	r    strings.Reader
	dec  *jsontext.Decoder
	text []byte // the last string or member name read, unquoted
	cost int
}

// maxPooledText bounds the string buffer a pooled reader keeps.
const maxPooledText = 64 << 10

var fastReaders = sync.Pool{New: func() any {
	f := &fastReader{}
	f.dec = jsontext.NewDecoder(&f.r)
	return f
}}

// fastCheck reports whether arguments are valid against n for sure, and what their check
// costs (cost.go); false leaves the call to the library.
func fastCheck(n *fastNode, arguments string) (cost int, valid bool) {
	f := fastReaders.Get().(*fastReader)
	defer func() {
		if cap(f.text) > maxPooledText {
			f.text = nil
		}
		f.r.Reset("")
		fastReaders.Put(f)
	}()
	f.r.Reset(arguments)
	f.dec.Reset(&f.r)
	f.cost = 0
	if f.dec.PeekKind() != '{' {
		return 0, false
	}
	s, ok := f.value(n, 0, 0)
	if !ok {
		return 0, false
	}
	if _, err := f.dec.ReadToken(); err != io.EOF {
		return 0, false
	}
	f.cost += n.w.weight(s, 0)
	return f.cost, f.cost <= maxCost
}

// shape is what the weight of a schema at a value depends on (cost.go's weight): the value's
// kind, an object's members and the bytes of their names, a string's bytes, what reading a
// number costs.
type shape struct {
	kind         jsontext.Kind
	n, names     int
	numberUnits  int
	integer, big bool // a number's text: an integer without fraction or exponent; one beyond int64
	value        int64
}

// weight is cost.go's weight for the schemas the fast path takes, whose work has no
// patterns, no uniqueItems, no numbers in enum or const and tracks nothing.
func (w work) weight(s shape, depth int) int {
	cost := 1 + depth/levelsPerUnit + w.values/valuesPerUnit
	switch s.kind {
	case '{':
		cost += s.n/membersPerUnit + s.names/hashedBytesPerUnit
	case '"':
		cost += s.n / copiedBytesPerUnit
		if w.length {
			cost += s.n / lengthBytesPerUnit
		}
	case '0':
		if w.reads {
			cost += 2 * s.numberUnits
		}
	}
	return cost
}

// value reads the value at the decoder, level containers deep (the arguments' object is
// the first), depth places below the arguments, and judges it against n (nil: no schema
// applies there). It adds to f.cost what the schemas below the value cost; the caller
// adds the weight of those at the value, from its shape.
func (f *fastReader) value(n *fastNode, level, depth int) (s shape, ok bool) {
	if n != nil && n.never {
		return s, false
	}
	s.kind = f.dec.PeekKind()
	switch s.kind {
	case '{', '[':
		if level == maxArgumentDepth {
			return s, false
		}
		if _, err := f.dec.ReadToken(); err != nil {
			return s, false
		}
		var ok bool
		if s.kind == '{' {
			ok = f.object(n, &s, level+1, depth+1)
		} else {
			ok = f.array(n, &s, level+1, depth+1)
		}
		if !ok {
			return s, false
		}
		if _, err := f.dec.ReadToken(); err != nil {
			return s, false
		}
	case '"':
		raw, err := f.dec.ReadValue()
		if err != nil {
			return s, false
		}
		if f.text, err = jsontext.AppendUnquote(f.text[:0], raw); err != nil {
			return s, false
		}
		s.n = len(f.text)
	case '0':
		raw, err := f.dec.ReadValue()
		if err != nil {
			return s, false
		}
		digits, exponent := numberSize(string(raw))
		if digits > maxNumberDigits || exponent > maxNumberExponent {
			return s, false // numberOverBounds: the library's path says the call is not checked
		}
		s.numberUnits = 1 + (digits+exponent)/digitsPerUnit
		s.integer = !slices.ContainsFunc(raw, func(c byte) bool { return c == '.' || c == 'e' || c == 'E' })
		if s.integer {
			s.value, err = strconv.ParseInt(string(raw), 10, 64)
			s.big = err != nil
		}
	default:
		if _, err := f.dec.ReadToken(); err != nil {
			return s, false
		}
	}
	return s, n == nil || n.judge(s, f.text)
}

// object reads an object's members after its '{' and judges them against n.
func (f *fastReader) object(n *fastNode, s *shape, level, depth int) bool {
	var present uint64
	for f.dec.PeekKind() == '"' {
		name, err := f.dec.ReadValue()
		if err != nil {
			return false
		}
		if f.text, err = jsontext.AppendUnquote(f.text[:0], name); err != nil {
			return false
		}
		s.n++
		s.names += len(f.text)
		var child *fastNode
		if n != nil {
			if p, ok := n.props[string(f.text)]; ok {
				child, present = p.node, present|1<<p.bit
			} else if n.additional == additionalFalse {
				return false
			} else {
				child = n.others
			}
		}
		vs, ok := f.value(child, level, depth)
		if !ok {
			return false
		}
		if child != nil {
			f.cost += child.w.weight(vs, depth)
		}
		if n != nil && (n.additional == additionalTrue || n.additional == additionalFalse) {
			f.cost += n.extra.weight(vs, depth)
		}
		if f.cost > maxCost {
			return false
		}
	}
	return n == nil || present&n.required == n.required
}

// array reads an array's items after its '[' and judges them against n.
func (f *fastReader) array(n *fastNode, s *shape, level, depth int) bool {
	var items *fastNode
	if n != nil {
		items = n.items
	}
	for f.dec.PeekKind() != ']' {
		vs, ok := f.value(items, level, depth)
		if !ok {
			return false
		}
		s.n++
		if items != nil {
			if f.cost += items.w.weight(vs, depth); f.cost > maxCost {
				return false
			}
		}
	}
	return true
}

// judge reports whether a value of shape s (text: a string's, unquoted) passes n's own
// keywords for sure.
func (n *fastNode) judge(s shape, text []byte) bool {
	if n.types != 0 {
		switch s.kind {
		case 'n':
			return n.types&typeNull != 0
		case 't', 'f':
			return n.types&typeBoolean != 0
		case '"':
			if n.types&typeString == 0 {
				return false
			}
		case '[':
			if n.types&typeArray == 0 {
				return false
			}
		case '{':
			if n.types&typeObject == 0 {
				return false
			}
		case '0':
			if n.types&typeNumber == 0 && (n.types&typeInteger == 0 || !s.integer) {
				return false // not a number it takes, or an integer written otherwise: the library decides
			}
		}
	}
	if n.enum != nil {
		if s.kind != '"' {
			return false
		}
		if _, ok := n.enum[string(text)]; !ok {
			return false
		}
	}
	switch s.kind {
	case '"':
		if n.minLen >= 0 || n.maxLen >= 0 {
			c := utf8.RuneCount(text)
			return (n.minLen < 0 || c >= n.minLen) && (n.maxLen < 0 || c <= n.maxLen)
		}
	case '[':
		return (n.minItems < 0 || s.n >= n.minItems) && (n.maxItems < 0 || s.n <= n.maxItems)
	case '0':
		if n.has == 0 {
			return true
		}
		if !s.integer || s.big {
			return false
		}
		v, b := s.value, n.bounds
		return (n.has&1 == 0 || v >= b[0]) && (n.has&2 == 0 || v <= b[1]) &&
			(n.has&4 == 0 || v > b[2]) && (n.has&8 == 0 || v < b[3])
	}
	return true
}
