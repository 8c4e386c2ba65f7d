package toolcheck

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/clip"
)

// A client's JSON Schema costs the gateway CPU and memory it does not cost the client: the
// schema library compiles about 40 µs of CPU and keeps about 1 KiB per subschema, searches
// its compile queue linearly (quadratic in subschemas), and looks for $ref cycles along
// the chain of schemas evaluated at one place of the arguments (quadratic in that chain,
// on every check). So every schema is measured, in one linear pass that stops at the
// first limit it exceeds, before anything compiles or rewrites it (docs/PROTOCOL.md 13.2).

// Limits bound one client schema (a tool's parameters, a response_format schema) and what
// one request may compile. The defaults are above what tool schemas need: a Kubernetes
// Deployment's, about the largest a tool sends (the Deployment and the 112 definitions it
// refers to, as $defs), is 176 KB, 871 subschemas nested 5 deep, 4 schemas at most in one
// $ref chain (TestMeasureRealSchemas; inlined, it needs max_subschemas 2000). And they keep
// the worst schema within them to about 40 ms of compiling on the 2-core development VM
// (BenchmarkCompileLargest), about 15 MiB at most once compiled by the cache's estimate (an
// enum of 31,000 small objects; the Deployment 1.7 MiB; TestCacheEstimate), and a check
// of a cached schema to the chain of schemas at one place that the validator's cost grows
// with (BenchmarkCheckLargest); what a check multiplies from one place to the next, and
// what each evaluation costs, is counted for each call (cost.go).
type Limits struct {
	// MaxBytes bounds the schema's JSON text, and the JSON pointers of its subschemas
	// added up (Size.PointerBytes).
	MaxBytes int
	// MaxSubschemas bounds the subschemas (objects and booleans in schema places, the root
	// included), and the schemas evaluated at one place of the arguments with every $ref
	// expanded, so $refs cannot multiply what is evaluated.
	MaxSubschemas int
	// MaxMembers bounds the members of one object or the elements of one array anywhere in
	// the schema (properties, anyOf, enum, required…).
	MaxMembers int
	// MaxDepth bounds how deep subschemas nest, the root being 1.
	MaxDepth int
	// MaxRefDepth bounds the longest chain of schemas evaluated at one place of the
	// arguments, following $ref and the applicators that stay in place (allOf, anyOf,
	// oneOf, not, if, then, else, dependentSchemas): the validator's cost for each schema
	// grows with that chain.
	MaxRefDepth int
	// MaxPatternSize bounds the regular expressions (pattern values, patternProperties
	// names) together, each counted by its length or, when its repetitions expand it to
	// more, by that (a{1000} counts 1,000): Go's regexp compiles each repetition out,
	// about 0.4 µs and 45 bytes for each 1 of size.
	MaxPatternSize int
	// CompileBudget bounds what the fresh compiles of one request may cost, in subschemas
	// (Size.Cost): cache hits are free, and a schema that would cost more than is left is
	// not compiled for that request (ErrOverBudget). A request's first compile goes ahead
	// whatever it costs, so every schema within the limits can be compiled by some request.
	CompileBudget int
}

// DefaultLimits are the limits of a gateway that sets none. A budget of 2,500 subschemas
// is at most about 50 ms of compiling.
var DefaultLimits = Limits{MaxBytes: 256 << 10, MaxSubschemas: 1000, MaxMembers: 1000, MaxDepth: 32, MaxRefDepth: 32,
	MaxPatternSize: 16 << 10, CompileBudget: 2500}

// Setting is a member of Limits by the name of its setting, schema_limits.<Name>, which
// Measure's messages name.
type Setting struct {
	Name  string
	Value *int
}

// Settings are l's members, in the order the configuration's help lists them: the one
// list of them.
func (l *Limits) Settings() []Setting {
	return []Setting{{"max_bytes", &l.MaxBytes}, {"max_subschemas", &l.MaxSubschemas}, {"max_members", &l.MaxMembers},
		{"max_depth", &l.MaxDepth}, {"max_ref_depth", &l.MaxRefDepth}, {"max_pattern_size", &l.MaxPatternSize},
		{"compile_budget", &l.CompileBudget}}
}

// OrDefaults is l with DefaultLimits' value in each field that is zero or less.
func (l Limits) OrDefaults() Limits {
	d := DefaultLimits
	defaults := d.Settings()
	for i, s := range l.Settings() {
		if *s.Value <= 0 {
			*s.Value = *defaults[i].Value
		}
	}
	return l
}

// Size is what Measure found in a schema within the limits.
type Size struct {
	Bytes, Subschemas int
	// Members is the most members of one object or array.
	Members int
	// Depth is how deep subschemas nest, the root being 1.
	Depth int
	// RefDepth is the longest chain of schemas evaluated at one place, $refs followed.
	RefDepth int
	// Evaluated is the most schemas evaluated at one place, every $ref expanded.
	Evaluated int
	// Values counts the JSON values, schemas included, and Objects the objects among the
	// values that are not schemas: the library keeps those of enum, const, default and
	// examples decoded, about 40 bytes a value and 350 an object.
	Values, Objects int
	// Patterns counts the regular expressions, PatternSize adds up their sizes (see
	// Limits.MaxPatternSize).
	Patterns, PatternSize int
	// PointerBytes adds up the lengths of the subschemas' JSON pointers: the library
	// builds each subschema's location from it, keeps it, and compares locations while it
	// compiles, so long names deep in a schema cost far more than their own bytes.
	// MaxBytes bounds it too.
	PointerBytes int
	// NumberDigits adds up the numbers' digits and exponents: the library reads a number
	// (minimum, multipleOf…) into a math/big.Rat whose size, and the time it takes, grow
	// with them (1e400 is 5 bytes of text and 170 of Rat).
	NumberDigits int
}

// What compiles in about the time of one subschema (8 to 20 µs on the 2-core development
// VM; BenchmarkCompileLargest): decoding and checking against the draft's metaschema 128
// values, 64 objects or 4 KiB of text; building 256 bytes of locations (JSON pointers,
// compared while compiling); compiling 8 regular expressions or 32 of their size; reading
// numbers of 512 digits and exponents added up (the library reads a number into a
// math/big.Rat, in up to 20 ns a digit, more than once).
const (
	valuesPerCost       = 128
	objectsPerCost      = 64
	bytesPerCost        = 4 << 10
	pointerBytesPerCost = 256
	patternsPerCost     = 8
	patternSizePerCost  = 32
	digitsPerCost       = 512
)

// Cost is what compiling the schema costs, in subschemas.
func (s Size) Cost() int {
	return s.Subschemas + s.Values/valuesPerCost + s.Objects/objectsPerCost + s.Bytes/bytesPerCost +
		s.PointerBytes/pointerBytesPerCost + s.Patterns/patternsPerCost + s.PatternSize/patternSizePerCost +
		s.NumberDigits/digitsPerCost
}

// settingPrefix is the configuration setting a limit's name belongs to, for messages.
const settingPrefix = "schema_limits."

// pointerMax bounds a JSON pointer into the schema that a message quotes: its tokens are
// the client's names.
const pointerMax = 2 * clip.QuoteMax

// Measure reads a schema's JSON text in one pass and returns its Size, or an error saying
// which limit it exceeds, where (a JSON pointer into the schema), and the setting that
// raises it, worded as the end of a message that starts with the schema's field
// ("tools[3].function.parameters: "). It stops at the first limit exceeded, so it reads
// at most MaxBytes of text whatever the schema holds, and keeps at most MaxSubschemas
// subschemas in memory. Text that is not JSON is not Measure's to refuse: it returns what
// it read by then and no error, and the translator refuses the text in its own words.
//
// Besides the limits, a schema is refused when one of its $refs leads back to itself at
// the same place of the arguments (a loop the validator can only report), when a $ref is
// not a URI reference, and when a $ref into the schema points at something that is not
// one of its subschemas (the library would compile whatever is there, unmeasured). A $ref
// to another document is left to the compiler, which loads nothing.
func Measure(source []byte, l Limits) (Size, error) {
	size, _, err := measureGraph(source, l)
	return size, err
}

// measureGraph is Measure, and the graph of where the schema's subschemas apply (nil for
// text that is not JSON), from which what a check costs is counted (cost.go).
func measureGraph(source []byte, l Limits) (Size, *graph, error) {
	l = l.OrDefaults()
	if n := len(source); n > l.MaxBytes {
		return Size{}, nil, refuse("%d bytes, at most %d are allowed (%smax_bytes)", n, l.MaxBytes, settingPrefix)
	}
	m := &measure{dec: jsontext.NewDecoder(bytes.NewBuffer(source), lenient), l: l,
		children: map[childKey]int32{}, size: Size{Bytes: len(source)}}
	if err := m.schema(-1, childKey{}, nowhere, 1); err != nil {
		if !errors.As(err, new(refusal)) {
			return m.size, nil, nil // the decoder's: not JSON
		}
		return Size{}, nil, err
	}
	m.identify()
	if err := m.resolve(); err != nil {
		return Size{}, nil, err
	}
	if err := m.evaluate(); err != nil {
		return Size{}, nil, err
	}
	return m.size, m.graph(), nil
}

// refusal is Measure's error: what the schema exceeds.
type refusal string

func (r refusal) Error() string { return string(r) }

func refuse(format string, args ...any) error { return refusal(fmt.Sprintf(format, args...)) }

// measure is one Measure's state. Not safe for concurrent use.
type measure struct {
	dec  *jsontext.Decoder
	l    Limits
	size Size
	// nodes are the subschemas in the order read: a parent before its children; work is
	// what each one's keywords cost at each evaluation (cost.go).
	nodes []node
	work  []work
	// children finds a subschema from its parent by the pointer tokens that lead to it.
	children map[childKey]int32
	// edges are the in-place applications: a schema applies another at the same place of
	// the arguments (through an applicator, or a $ref once resolved).
	edges []edge
	// below are the applications one place down in the arguments.
	below []edge
	// What the pass found, resolved once every subschema is known.
	refs   []ref
	idents []ident
	// rootDraft is the root's $schema.
	rootDraft string
	// Once identified: the schemas with an id (their resources' roots), the base URL of
	// each subschema's resource, and the anchors.
	ids     map[string]int32 // absolute URL → resource root
	base    []string         // of each node
	res     []int32          // each node's resource root
	anchors map[anchorKey]int32
	dynamic map[string][]int32 // $dynamicAnchor name → the schemas declaring it
	recur   []int32            // the schemas with "$recursiveAnchor": true
}

// node is a subschema: where it is.
type node struct {
	parent int32 // -1 for the root
	key    childKey
	// pointerLen is the length of its JSON pointer.
	pointerLen int
}

// childKey leads from a subschema to one of its subschemas: the keyword, and the member
// name or index for keywords whose value is a map or a list of schemas.
type childKey struct {
	parent    int32
	keyword   string
	member    string
	hasMember bool
}

type edge struct {
	from, to int32
	at       application // for below: where
	name     string      // toNamed: the member
	// choice numbers, from 1, the reference whose edges these are when it may lead to
	// several schemas ($dynamicRef, $recursiveRef), of which the validator evaluates one;
	// 0 for every other edge. A choice's edges are consecutive.
	choice int32
}

// ref is a reference to resolve once every subschema is known.
type ref struct {
	node    int32
	keyword string // $ref, $dynamicRef or $recursiveRef
	target  string
}

// ident is an identifier of a subschema: $id (id in draft-04), $anchor, $dynamicAnchor.
type ident struct {
	node           int32
	keyword, value string
}

type anchorKey struct {
	resource int32
	name     string
}

// application is where the validator applies a subschema, relative to its parent's place in
// the arguments.
type application uint8

const (
	nowhere   application = iota // only through a $ref ($defs), or never (contentSchema)
	inPlace                      // at the parent's place
	toNamed                      // at the member of the parent's object that the key names
	toMembers                    // at members of the parent's object (patternProperties, additionalProperties…)
	toNames                      // at the names of the parent's object's members (propertyNames)
	toItems                      // at items of the parent's array
)

// Schema keywords by what their values hold (draft 2020-12 and 2019-09, and draft-07's and
// draft-04's definitions, dependencies, additionalItems and list-form items), and where the
// schemas they hold apply. Every draft's keywords are read on every draft: counting a
// schema the library ignores costs only some margin.
var (
	schemaKeywords = map[string]application{"additionalProperties": toMembers, "additionalItems": toItems,
		"unevaluatedProperties": toMembers, "unevaluatedItems": toItems, "contains": toItems, "propertyNames": toNames,
		"items": toItems, "contentSchema": nowhere, "not": inPlace, "if": inPlace, "then": inPlace, "else": inPlace}
	mapKeywords = map[string]application{"properties": toNamed, "patternProperties": toMembers, "$defs": nowhere,
		"definitions": nowhere, "dependentSchemas": inPlace, "dependencies": inPlace}
	listKeywords = map[string]application{"allOf": inPlace, "anyOf": inPlace, "oneOf": inPlace, "prefixItems": toItems,
		"items": toItems}
	// valueKeywords hold values a message about their size may name.
	valueKeywords = map[string]bool{"enum": true, "required": true, "const": true, "default": true, "examples": true,
		"type": true, "dependentRequired": true}
)

// schema reads the subschema at the decoder, reached from parent by key and applied at; depth
// is its nesting, the root's 1.
func (m *measure) schema(parent int32, key childKey, at application, depth int) error {
	if len(m.nodes) == m.l.MaxSubschemas {
		return refuse("more than %d subschemas (the next at %s), at most %d are allowed (%smax_subschemas)",
			m.l.MaxSubschemas, m.pointerTo(parent, key), m.l.MaxSubschemas, settingPrefix)
	}
	if depth > m.l.MaxDepth {
		return refuse("subschemas nested %d deep at %s, at most %d are allowed (%smax_depth)",
			depth, m.pointerTo(parent, key), m.l.MaxDepth, settingPrefix)
	}
	id := int32(len(m.nodes))
	nd := node{parent: parent, key: key}
	if parent >= 0 {
		nd.pointerLen = m.nodes[parent].pointerLen + tokenLen(key.keyword)
		if key.hasMember {
			nd.pointerLen += tokenLen(key.member)
		}
	}
	if m.size.PointerBytes += nd.pointerLen; m.size.PointerBytes > m.l.MaxBytes {
		return refuse("its subschemas' JSON pointers add up to more than %d bytes (the library keeps one for each; the one that crosses it at %s), at most %d are allowed (%smax_bytes)",
			m.l.MaxBytes, m.pointerTo(parent, key), m.l.MaxBytes, settingPrefix)
	}
	m.nodes, m.work = append(m.nodes, nd), append(m.work, work{})
	m.size.Subschemas, m.size.Depth = len(m.nodes), max(m.size.Depth, depth)
	if parent >= 0 {
		key.parent = parent
		m.children[key] = id
		switch at {
		case nowhere:
		case inPlace:
			m.edges = append(m.edges, edge{from: parent, to: id})
		default:
			m.below = append(m.below, edge{from: parent, to: id, at: at, name: key.member})
		}
	}
	if m.dec.PeekKind() != '{' {
		return m.value(id, childKey{}, false) // a boolean schema, or something the compiler refuses
	}
	if _, err := m.dec.ReadToken(); err != nil {
		return err
	}
	m.size.Values++
	members := 0
	for m.dec.PeekKind() == '"' {
		if members++; members > m.l.MaxMembers {
			return m.tooMany(m.pointer(id), "", members-1+m.rest('}'))
		}
		tok, err := m.dec.ReadToken()
		if err != nil {
			return err
		}
		if err := m.member(id, tok.String(), depth); err != nil {
			return err
		}
	}
	m.size.Members = max(m.size.Members, members)
	_, err := m.dec.ReadToken()
	return err
}

// member reads the value of schema n's member name.
func (m *measure) member(n int32, name string, depth int) error {
	switch k := m.dec.PeekKind(); {
	case k == '"' && (name == "$ref" || name == "$dynamicRef" || name == "$recursiveRef" || name == "pattern" ||
		name == "$id" || name == "id" || name == "$anchor" || name == "$dynamicAnchor" || name == "$schema"):
		tok, err := m.dec.ReadToken()
		if err != nil {
			return err
		}
		m.size.Values++
		switch name {
		case "pattern":
			return m.pattern(n, childKey{keyword: name}, tok.String())
		case "$ref", "$dynamicRef", "$recursiveRef":
			m.refs = append(m.refs, ref{node: n, keyword: name, target: tok.String()})
		case "$schema":
			if n == 0 {
				m.rootDraft = tok.String()
			}
		default:
			m.idents = append(m.idents, ident{node: n, keyword: name, value: tok.String()})
		}
		return nil
	case k == 't' && name == "$recursiveAnchor":
		m.idents = append(m.idents, ident{node: n, keyword: name})
	case k == '{' || k == 't' || k == 'f':
		if at, ok := schemaKeywords[name]; ok {
			m.work[n].unevaluated = m.work[n].unevaluated || name == "unevaluatedProperties" || name == "unevaluatedItems"
			return m.schema(n, childKey{keyword: name}, at, depth+1)
		}
		if at, ok := mapKeywords[name]; ok && k == '{' {
			return m.schemas(n, name, at, depth, '}')
		}
	case k == '[':
		if at, ok := listKeywords[name]; ok {
			return m.schemas(n, name, at, depth, ']')
		}
	}
	return m.value(n, childKey{keyword: name}, false)
}

// schemas reads the map (end '}') or list (end ']') of subschemas of keyword in schema
// parent. A member that is neither an object nor a boolean is a value (a dependencies
// member listing properties).
func (m *measure) schemas(parent int32, keyword string, at application, depth int, end jsontext.Kind) error {
	if _, err := m.dec.ReadToken(); err != nil {
		return err
	}
	m.size.Values++
	n := 0
	for m.dec.PeekKind() != end {
		if n++; n > m.l.MaxMembers {
			return m.tooMany(m.pointerTo(parent, childKey{keyword: keyword}), keyword, n-1+m.rest(end))
		}
		key := childKey{keyword: keyword, member: strconv.Itoa(n - 1), hasMember: true}
		if end == '}' {
			tok, err := m.dec.ReadToken()
			if err != nil {
				return err
			}
			key.member = tok.String()
			if keyword == "patternProperties" {
				if err := m.pattern(parent, key, key.member); err != nil {
					return err
				}
			}
		}
		var err error
		if k := m.dec.PeekKind(); k == '{' || k == 't' || k == 'f' {
			// One subschema too many: when its list is over max_members too, the message
			// names the list's length, which is what the client has to change.
			if len(m.nodes) == m.l.MaxSubschemas && m.dec.SkipValue() == nil {
				if total := n + m.rest(end); total > m.l.MaxMembers {
					return m.tooMany(m.pointerTo(parent, childKey{keyword: keyword}), keyword, total)
				}
			}
			err = m.schema(parent, key, at, depth+1)
		} else {
			err = m.value(parent, key, false)
		}
		if err != nil {
			return err
		}
	}
	m.size.Members = max(m.size.Members, n)
	_, err := m.dec.ReadToken()
	return err
}

// value reads a value that is not a schema, reached by key from schema at, counting the
// members of each object and array in it; within says it is inside that value.
func (m *measure) value(at int32, key childKey, within bool) error {
	tok, err := m.dec.ReadToken()
	if err != nil {
		return err
	}
	m.size.Values++
	m.note(at, key.keyword, tok)
	ptr := func() string {
		if within {
			return m.pointerTo(at, key) + "/…" // its pointer would quote the client's data
		}
		return m.pointerTo(at, key)
	}
	end := jsontext.Kind('}')
	switch tok.Kind() {
	case '{':
		m.size.Objects++
	case '[':
		end = ']'
	case '0':
		if numberOverBounds(tok.String()) {
			return refuse("a number beyond what the gateway reads at %s (%s)", ptr(), numberBounds)
		}
		digits, exponent := numberSize(tok.String())
		m.size.NumberDigits += digits + exponent
		return nil
	default:
		return nil
	}
	n := 0
	for m.dec.PeekKind() != end {
		if n++; n > m.l.MaxMembers {
			return m.tooMany(ptr(), key.keyword, n-1+m.rest(end))
		}
		if end == '}' {
			if _, err := m.dec.ReadToken(); err != nil {
				return err
			}
		}
		if err := m.value(at, key, true); err != nil {
			return err
		}
	}
	m.size.Members = max(m.size.Members, n)
	_, err = m.dec.ReadToken()
	return err
}

// note records in schema at's work what a token of its keyword's value makes the validator
// do at each evaluation.
func (m *measure) note(at int32, keyword string, tok jsontext.Token) {
	w := &m.work[at]
	switch keyword {
	case "enum", "const":
		w.values++
		if tok.Kind() == '0' {
			digits, exponent := numberSize(tok.String())
			w.numbers, w.digits = w.numbers+1, w.digits+digits+exponent
		}
	case "required", "dependentRequired", "dependencies":
		w.values++
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		w.reads = w.reads || tok.Kind() == '0'
	case "type":
		w.reads = w.reads || tok.Kind() == '"' && tok.String() == "integer"
	case "minLength", "maxLength":
		w.length = true
	case "uniqueItems":
		w.unique = w.unique || tok.Kind() == 't'
	}
}

// pattern counts a regular expression of schema at, reached by key. It is parsed (in
// time linear in its length) only when its length fits in what is left of
// MaxPatternSize, so the patterns parsed add up to at most that.
func (m *measure) pattern(at int32, key childKey, re string) error {
	size := len(re)
	if size <= m.l.MaxPatternSize-m.size.PatternSize {
		if tree, err := syntax.Parse(re, syntax.Perl); err == nil { // else it does not compile
			size = max(size, expanded(tree))
		}
	}
	m.size.Patterns++
	if key.keyword == "pattern" {
		m.work[at].pattern += size
	} else {
		m.work[at].namePatterns += size
	}
	if m.size.PatternSize += size; m.size.PatternSize > m.l.MaxPatternSize {
		return refuse("regular expressions (pattern, patternProperties) of more than %d in size, repetitions expanded (the one that crosses it at %s), at most %d are allowed (%smax_pattern_size)",
			m.l.MaxPatternSize, m.pointerTo(at, key), m.l.MaxPatternSize, settingPrefix)
	}
	return nil
}

// expanded is the size of a parsed regular expression with its repetitions written out,
// as Go's regexp compiles them: a node for each operator, rune and range. Go refuses
// repetitions nested beyond a count of 1,000, so the size stays within 1,000 times the
// expression's length.
func expanded(re *syntax.Regexp) int {
	n := 1 + len(re.Rune)
	for _, sub := range re.Sub {
		n += expanded(sub)
	}
	if re.Op == syntax.OpRepeat {
		times := re.Max
		if times < 0 { // {n,}: n copies and a star
			times = re.Min + 1
		}
		n = 1 + max(times, 1)*(n-1)
	}
	return n
}

// tokenLen is the length of a JSON pointer token, its slash and escapes included.
func tokenLen(tok string) int {
	return 1 + len(tok) + strings.Count(tok, "/") + strings.Count(tok, "~")
}

// rest counts the members left in the object or array being read (end '}' or ']'),
// skipping them: a message about too many says how many there are, still in one pass over
// the text.
func (m *measure) rest(end jsontext.Kind) int {
	n := 0
	for k := m.dec.PeekKind(); k != end && k != 0; k = m.dec.PeekKind() {
		if end == '}' {
			if _, err := m.dec.ReadToken(); err != nil {
				break
			}
		}
		if m.dec.SkipValue() != nil {
			break
		}
		n++
	}
	return n
}

// tooMany is the error of an object or array with n members, more than MaxMembers.
func (m *measure) tooMany(at, keyword string, n int) error {
	in := " in one schema"
	_, value := valueKeywords[keyword]
	_, schema := schemaKeywords[keyword]
	_, schemaMap := mapKeywords[keyword]
	_, list := listKeywords[keyword]
	switch {
	case value || schema || schemaMap || list:
		in = " in " + keyword
	case keyword != "":
		in = ""
	}
	return refuse("%d members%s at %s, at most %d are allowed (%smax_members)", n, in, at, m.l.MaxMembers, settingPrefix)
}

// identify finds each subschema's resource, as the library does: a schema with an id
// ($id; id in draft-04) is one, resolved against its parent's, and the rest belong to
// their parent's; anchors belong to their schema's resource.
func (m *measure) identify() {
	idKeyword := "$id"
	if strings.Contains(m.rootDraft, "draft-04") {
		idKeyword = "id"
	}
	own := map[int32]string{}
	m.anchors, m.dynamic = map[anchorKey]int32{}, map[string][]int32{}
	for _, id := range m.idents {
		if id.keyword == idKeyword && !strings.HasPrefix(id.value, "#") {
			own[id.node] = id.value
		}
	}
	m.ids, m.base, m.res = map[string]int32{schemaURL: 0}, make([]string, len(m.nodes)), make([]int32, len(m.nodes))
	for i, nd := range m.nodes {
		base, res := schemaURL, int32(0)
		if nd.parent >= 0 {
			base, res = m.base[nd.parent], m.res[nd.parent]
		}
		if id, ok := own[int32(i)]; ok {
			if abs, err := resolveURL(base, id); err == nil { // else the compiler refuses it
				base, res = abs, int32(i)
				m.ids[abs] = res
			}
		}
		m.base[i], m.res[i] = base, res
	}
	for _, id := range m.idents {
		switch {
		case id.keyword == "$anchor" || id.keyword == "$dynamicAnchor":
			m.anchors[anchorKey{m.res[id.node], id.value}] = id.node
			if id.keyword == "$dynamicAnchor" {
				m.dynamic[id.value] = append(m.dynamic[id.value], id.node)
			}
		case id.keyword == idKeyword && strings.HasPrefix(id.value, "#"): // draft-07's anchors
			m.anchors[anchorKey{m.res[id.node], id.value[1:]}] = id.node
		case id.keyword == "$recursiveAnchor":
			m.recur = append(m.recur, id.node)
		}
	}
}

// resolveURL resolves ref against base.
func resolveURL(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(r).String(), nil
}

// resolve turns each reference into in-place edges to where it may lead.
func (m *measure) resolve() error {
	for i, r := range m.refs {
		targets, err := m.targets(r)
		if err != nil {
			return refuse("the %s at %s %s", r.keyword, m.pointer(r.node), err.Error())
		}
		choice := int32(0)
		if len(targets) > 1 {
			choice = int32(i + 1)
		}
		for _, t := range targets {
			m.edges = append(m.edges, edge{from: r.node, to: t, choice: choice})
		}
	}
	return nil
}

// targets are the subschemas a reference may lead to: its target; for a $dynamicRef or
// $recursiveRef whose target declares the dynamic anchor, which the validator resolves
// along the path it took, every schema that declares it (the target among them), one of
// which is evaluated. None for a reference to another document, which the compiler does
// not load.
func (m *measure) targets(r ref) ([]int32, error) {
	u, err := url.Parse(r.target)
	if err != nil {
		return nil, refuse("is not a URI reference: %s", clip.Quote(r.target))
	}
	base, _ := url.Parse(m.base[r.node]) // an absolute URL identify made
	abs := base.ResolveReference(u)
	frag := abs.Fragment
	abs.Fragment, abs.RawFragment = "", ""
	res, ok := m.ids[abs.String()]
	if !ok {
		return nil, nil
	}
	target := res
	switch {
	case frag == "":
	case strings.HasPrefix(frag, "/"):
		target, ok = m.lookup(res, frag)
	default:
		target, ok = m.anchors[anchorKey{res, frag}]
	}
	if !ok {
		return nil, refuse("points at no subschema of this schema: %s", clip.Quote(r.target))
	}
	switch {
	case r.keyword == "$dynamicRef" && slices.Contains(m.dynamic[frag], target):
		return m.dynamic[frag], nil
	case r.keyword == "$recursiveRef" && slices.Contains(m.recur, target):
		return m.recur, nil
	}
	return []int32{target}, nil
}

// lookup follows a JSON pointer (RFC 6901) from subschema n to a subschema.
func (m *measure) lookup(n int32, ptr string) (int32, bool) {
	tokens := strings.Split(ptr[1:], "/")
	for i := 0; i < len(tokens); i++ {
		tok := unescapeToken.Replace(tokens[i])
		if c, ok := m.children[childKey{parent: n, keyword: tok}]; ok {
			n = c
			continue
		}
		if i+1 == len(tokens) {
			return 0, false
		}
		c, ok := m.children[childKey{parent: n, keyword: tok, member: unescapeToken.Replace(tokens[i+1]), hasMember: true}]
		if !ok {
			return 0, false
		}
		n, i = c, i+1
	}
	return n, true
}

var unescapeToken = strings.NewReplacer("~1", "/", "~0", "~")

// evaluate measures what is evaluated at one place of the arguments, following the
// in-place edges: they must hold no cycle; their longest chain is RefDepth; the schemas
// they reach, counting each path (a $ref used twice is evaluated twice) and of a choice
// the target that reaches most, are Evaluated. One depth-first walk, each node once:
// linear in the subschemas and edges.
func (m *measure) evaluate() error {
	n := len(m.nodes)
	start := make([]int32, n+1) // the edges of node v are out[start[v]:start[v+1]]
	for _, e := range m.edges {
		start[e.from+1]++
	}
	for i := range n {
		start[i+1] += start[i]
	}
	out, fill := make([]edge, len(m.edges)), append([]int32(nil), start[:n]...)
	for _, e := range m.edges {
		out[fill[e.from]] = e
		fill[e.from]++
	}
	const (
		unseen = iota
		open
		done
	)
	state := make([]uint8, n)
	chain := make([]int, n) // the longest chain from each node, itself included
	count := make([]int, n) // the schemas evaluated from each node, at most MaxSubschemas+1
	var visit func(v int32) error
	visit = func(v int32) error {
		state[v] = open
		chain[v], count[v] = 1, 1
		edges, best := out[start[v]:start[v+1]], 0 // best: of the choice being read
		for i, e := range edges {
			w := e.to
			switch state[w] {
			case open:
				return refuse("the schema at %s applies itself again at the same place of the arguments through $ref, without end",
					m.pointer(w))
			case unseen:
				if err := visit(w); err != nil {
					return err
				}
			}
			chain[v] = max(chain[v], chain[w]+1)
			if e.choice == 0 {
				count[v] = min(count[v]+count[w], m.l.MaxSubschemas+1)
				continue
			}
			if best = max(best, count[w]); i+1 == len(edges) || edges[i+1].choice != e.choice {
				count[v], best = min(count[v]+best, m.l.MaxSubschemas+1), 0
			}
		}
		state[v] = done
		switch {
		case chain[v] > m.l.MaxRefDepth:
			return refuse("a chain of %d schemas evaluated at one place of the arguments (through $ref and in-place applicators) from %s, at most %d are allowed (%smax_ref_depth)",
				chain[v], m.pointer(v), m.l.MaxRefDepth, settingPrefix)
		case count[v] > m.l.MaxSubschemas:
			return refuse("more than %d schemas evaluated at one place of the arguments from %s, $refs expanded, at most %d are allowed (%smax_subschemas)",
				m.l.MaxSubschemas, m.pointer(v), m.l.MaxSubschemas, settingPrefix)
		}
		m.size.RefDepth, m.size.Evaluated = max(m.size.RefDepth, chain[v]), max(m.size.Evaluated, count[v])
		return nil
	}
	for v := range int32(n) {
		if state[v] == unseen {
			if err := visit(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// pointer is the JSON pointer of subschema n, the root "/", cut to pointerMax.
func (m *measure) pointer(n int32) string {
	if n <= 0 {
		return "/"
	}
	return m.pointerTo(m.nodes[n].parent, m.nodes[n].key)
}

// pointerTo is the JSON pointer of what key leads to from subschema parent (-1: the
// root, whatever key), cut to pointerMax.
func (m *measure) pointerTo(parent int32, key childKey) string {
	if parent < 0 {
		return "/"
	}
	var tokens []string // leaf first
	for {
		if key.hasMember {
			tokens = append(tokens, key.member)
		}
		if key.keyword != "" {
			tokens = append(tokens, key.keyword)
		}
		if parent <= 0 {
			break
		}
		key, parent = m.nodes[parent].key, m.nodes[parent].parent
	}
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for i := len(tokens) - 1; i >= 0 && b.Len() <= pointerMax; i-- {
		b.WriteByte('/')
		b.WriteString(escapeToken.Replace(clip.String(tokens[i], pointerMax)))
	}
	return clip.String(b.String(), pointerMax)
}
