package toolcheck

import (
	"bytes"
	"cmp"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/nirmata/llm-gateway/internal/clip"
)

// MaxViolations bounds the violations of one call.
const MaxViolations = 10

// maxRuleBytes bounds one violation: a pointer names keys the model wrote, a rule quotes
// the schema (a pattern, an enum), and neither may grow a line without bound.
const maxRuleBytes = 300

// schemaURL is where a tool's schema lives for the compiler. Nothing is served there: a
// relative "$ref" resolves against it to a document that is never loaded.
const schemaURL = "https://tool.gateway.invalid/parameters.json"

// lenient reads JSON as the gateway reads clients' JSON: invalid UTF-8 becomes U+FFFD and
// a key named twice keeps its last value.
var lenient = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// errRemote is the loader's answer to every document a schema refers to.
var errRemote = errors.New("the gateway loads no schema from elsewhere; only local $refs (#/$defs/…) are resolved")

type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, errRemote }

// formats are the format names the library asserts on its own (draft-07 and older
// always do); each is replaced with one that accepts every value, since the contract does
// not assert format. "regex" cannot be replaced: patterns (regexps) makes it accept every
// value.
var formats = []string{"json-pointer", "relative-json-pointer", "uuid", "duration", "period", "ipv4", "ipv6",
	"hostname", "email", "idn-email", "idn-hostname", "date", "time", "date-time", "uri", "iri", "uri-reference",
	"iri-reference", "uri-template", "semver"}

func anyFormat(any) error { return nil }

// patterns is the regular expression engine of one schema's compiler. The library uses it
// for the schema's pattern and patternProperties, which Measure bounded, and for format
// "regex", which it asserts on draft-07 and older by compiling every string of the
// arguments there as a regular expression (a 5 KB string took 0.2 to 0.5 s), and which
// cannot be replaced. Once the schema is compiled, the engine compiles nothing: every
// string is a valid "regex", as every value is of every other format.
type patterns struct{ compiled atomic.Bool }

func (p *patterns) compile(re string) (jsonschema.Regexp, error) {
	if p.compiled.Load() {
		return nil, nil // only RegexpEngine.validate calls it then, which keeps the error alone
	}
	return regexp.Compile(re)
}

// compile compiles a tool schema, source being its JSON text. A panic of the library is a
// schema that does not compile.
func compile(source []byte) (s *jsonschema.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("the schema library failed on this schema: %v", p)
		}
	}()
	doc, err := decode(source, -1)
	if err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	for _, name := range formats {
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: anyFormat})
	}
	engine := &patterns{}
	c.UseRegexpEngine(engine.compile)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	defer engine.compiled.Store(true)
	return c.Compile(schemaURL)
}

// Check returns the violations of arguments, a call's arguments as JSON text, against s
// (nil: any JSON object passes), or nil when there is none. err is ErrTooCostly for
// arguments whose check would cost more than a check may (cost.go) or than the request's
// budget b has left for checks (nil: no request bound), or that nest deeper than
// maxArgumentDepth or hold a number beyond numberBounds: the call is not checked. A panic
// of the library leaves the call unjudged (nil): it is a bug of the library, not of the
// call.
func (s *Schema) Check(arguments string, b *Budget) (violations []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			violations = nil
		}
	}()
	if s != nil && s.fast != nil {
		if cost, valid := fastCheck(s.fast, arguments); valid {
			if !b.takeCheck(cost) {
				return nil, ErrTooCostly
			}
			return nil, nil
		}
	}
	v, err := decode([]byte(arguments), maxArgumentDepth)
	switch {
	case errors.Is(err, ErrTooCostly):
		return nil, err
	case err != nil:
		return []string{"/: the arguments are not valid JSON"}, nil
	case kindOf(v) != "object":
		return []string{"/: expected object, got " + kindOf(v)}, nil
	case s == nil || s.s == nil:
		return nil, nil
	case s.g != nil:
		if cost := s.g.cost(v); cost > maxCost || !b.takeCheck(cost) {
			return nil, ErrTooCostly
		}
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{"/: does not match the schema"}, nil
	}
	var found top
	collect(ve, &found)
	return found.lines(), nil
}

// UnknownTool is the violation of a call to a tool the request did not offer.
func UnknownTool(name string) []string {
	return []string{"/: there is no tool named " + clip.Quote(name) + " in tools"}
}

// violation is one failure: where in the arguments, the rule broken, and the line that
// says so.
type violation struct {
	at   []string
	rule string
	text string
}

// top keeps the first MaxViolations violations in their order: by the arguments'
// pointers, token by token, an array's indexes by number, then by rule, so the same call
// always reads the same; of violations whose lines read alike and are neighbors in that
// order, the first. A check may meet many more (an error for each of 10,000 items of the
// wrong type, 1,000 required names missing from each of 1,000 objects), so a violation is
// worded only when its pointer does not come after the last one kept. Not safe for
// concurrent use.
type top struct{ kept []violation }

// admits reports whether a violation at the pointer at may be kept.
func (t *top) admits(at []string) bool {
	return len(t.kept) < MaxViolations || comparePointers(at, t.kept[len(t.kept)-1].at) <= 0
}

// add keeps the violation of rule at the pointer at when it is among the first.
func (t *top) add(at []string, rule string) {
	if !t.admits(at) {
		return
	}
	v := violation{at: at, rule: rule, text: clip.String(pointer(at)+": "+rule, maxRuleBytes)}
	i, _ := slices.BinarySearchFunc(t.kept, v, func(a, b violation) int {
		return cmp.Or(comparePointers(a.at, b.at), strings.Compare(a.rule, b.rule))
	})
	if i > 0 && t.kept[i-1].text == v.text || i < len(t.kept) && t.kept[i].text == v.text {
		return
	}
	t.kept = slices.Insert(t.kept, i, v)
	t.kept = t.kept[:min(len(t.kept), MaxViolations)]
}

// lines are the violations kept, each written "<pointer>: <rule>".
func (t *top) lines() []string {
	out := make([]string, len(t.kept))
	for i, v := range t.kept {
		out[i] = v.text
	}
	return out
}

// collect walks an error tree to the failures a model can act on. Groups (allOf, a $ref,
// the root) stand for their causes; anyOf and oneOf are one failure each, at their place:
// what every branch disliked would not tell the model which branch it meant.
func collect(e *jsonschema.ValidationError, out *top) {
	loc := e.InstanceLocation
	add := func(rule string) { out.add(loc, rule) }
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			collect(c, out)
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			if at := append(slices.Clip(loc), p); out.admits(at) {
				out.add(at, "property not allowed")
			}
		}
		return
	case *kind.PropertyNames:
		out.add(append(slices.Clip(loc), k.Property), "property name not allowed by propertyNames")
		return
	}
	if !out.admits(loc) {
		return // before wording it
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Format, *kind.ContentEncoding, *kind.ContentMediaType, *kind.ContentSchema:
		// Not asserted (docs/PROTOCOL.md 13.2).
	case *kind.Type:
		add("expected " + strings.Join(k.Want, " or ") + ", got " + k.Got)
	case *kind.Required:
		for _, p := range k.Missing {
			add("missing required property " + strconv.Quote(p))
		}
	case *kind.Dependency:
		for _, p := range k.Missing {
			add("missing property " + strconv.Quote(p) + ", required with " + strconv.Quote(k.Prop))
		}
	case *kind.DependentRequired:
		for _, p := range k.Missing {
			add("missing property " + strconv.Quote(p) + ", required with " + strconv.Quote(k.Prop))
		}
	case *kind.Enum:
		add("must be one of " + values(k.Want))
	case *kind.Const:
		add("must be " + value(k.Want))
	case *kind.MinLength:
		add("must be at least " + strconv.Itoa(k.Want) + " characters long")
	case *kind.MaxLength:
		add("must be at most " + strconv.Itoa(k.Want) + " characters long")
	case *kind.Pattern:
		add("must match the pattern " + strconv.Quote(k.Want))
	case *kind.Minimum:
		add("must be at least " + number(k.Want))
	case *kind.Maximum:
		add("must be at most " + number(k.Want))
	case *kind.ExclusiveMinimum:
		add("must be greater than " + number(k.Want))
	case *kind.ExclusiveMaximum:
		add("must be less than " + number(k.Want))
	case *kind.MultipleOf:
		add("must be a multiple of " + number(k.Want))
	case *kind.MinItems:
		add("must have at least " + strconv.Itoa(k.Want) + " items")
	case *kind.MaxItems:
		add("must have at most " + strconv.Itoa(k.Want) + " items")
	case *kind.AdditionalItems:
		add("must have " + strconv.Itoa(k.Count) + " fewer items (additionalItems)")
	case *kind.UniqueItems:
		add(fmt.Sprintf("items must be unique; items %d and %d are equal", k.Duplicates[0], k.Duplicates[1]))
	case *kind.Contains:
		add("must contain an item that matches contains")
	case *kind.MinContains:
		add("must contain at least " + strconv.Itoa(k.Want) + " items that match contains")
	case *kind.MaxContains:
		add("must contain at most " + strconv.Itoa(k.Want) + " items that match contains")
	case *kind.MinProperties:
		add("must have at least " + strconv.Itoa(k.Want) + " properties")
	case *kind.MaxProperties:
		add("must have at most " + strconv.Itoa(k.Want) + " properties")
	case *kind.AnyOf:
		add("must match at least one schema of anyOf")
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			add("must match exactly one schema of oneOf, matches none")
		} else {
			add("must match exactly one schema of oneOf, matches several")
		}
	case *kind.Not:
		add("must not match the schema of not")
	case *kind.FalseSchema:
		add("not allowed")
	default: // kinds a later version of the library adds
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				collect(c, out)
			}
			return
		}
		add("does not match the schema")
	}
}

func comparePointers(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil {
			return cmp.Compare(x, y)
		}
		return strings.Compare(a[i], b[i])
	}
	return cmp.Compare(len(a), len(b))
}

var escapeToken = strings.NewReplacer("~", "~0", "/", "~1")

// pointer writes tokens as a JSON pointer (RFC 6901), the root as "/".
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken.Replace(t))
	}
	return b.String()
}

// maxQuotedValues bounds the values a rule lists (an enum).
const maxQuotedValues = 10

func values(vs []any) string {
	parts := make([]string, 0, min(len(vs), maxQuotedValues))
	for i, v := range vs {
		if i == maxQuotedValues {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, value(v))
	}
	return strings.Join(parts, ", ")
}

// value writes a schema value as JSON, cut short.
func value(v any) string {
	return clip.String(string(appendValue(nil, v)), clip.QuoteMax)
}

// appendValue appends a decoded value as compact JSON, object keys sorted.
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case stdjson.Number:
		return append(b, v...)
	case string:
		b, _ = jsontext.AppendQuote(b, v)
		return b
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = jsontext.AppendQuote(b, k)
			b = appendValue(append(b, ':'), v[k])
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

func number(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// kindOf names a decoded JSON value's type as the rules do.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case stdjson.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "value"
}

// maxArgumentDepth bounds how deep a call's arguments may nest to be checked: the library
// copies a value's location, its path from the root, into every error it makes there, so
// an evaluation's cost grows with the depth (a 66-byte recursive schema that requires a
// member at every level took 11 s on arguments 9,000 deep), and so do the violations'
// pointers. Tool arguments nest a few levels; a Kubernetes manifest about 10.
const maxArgumentDepth = 64

// Arguments beyond what the gateway reads: not checked.
var (
	errTooDeep    = fmt.Errorf("%w: the arguments nest more than %d deep", ErrTooCostly, maxArgumentDepth)
	errBigNumbers = fmt.Errorf("%w: a number in the arguments is beyond what the gateway reads (%s)", ErrTooCostly, numberBounds)
)

// decode reads one JSON value into the types the schema library validates: objects as
// map[string]any, arrays as []any, numbers as encoding/json's Number (their exact digits,
// so multipleOf and large integers are checked exactly), strings, booleans and nil.
// It nests at most maxDepth objects and arrays deep, any depth when negative (errTooDeep);
// a number beyond numberBounds is errBigNumbers (a schema's were refused by Measure).
func decode(text []byte, maxDepth int) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(text), lenient)
	v, err := decodeValue(dec, maxDepth)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// decodeValue reads the value at dec, which may nest depth objects and arrays deep, any
// when negative.
func decodeValue(dec *jsontext.Decoder, depth int) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch k := tok.Kind(); k {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		if numberOverBounds(tok.String()) {
			return nil, errBigNumbers
		}
		return stdjson.Number(tok.String()), nil
	case '{', '[':
		if depth == 0 {
			return nil, errTooDeep
		}
		depth--
		if k == '[' {
			arr := []any{}
			for dec.PeekKind() != ']' {
				v, err := decodeValue(dec, depth)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.ReadToken()
			return arr, err
		}
		obj := map[string]any{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String()
			if obj[key], err = decodeValue(dec, depth); err != nil {
				return nil, err
			}
		}
		_, err := dec.ReadToken()
		return obj, err
	}
	return nil, fmt.Errorf("unexpected %v", tok.Kind())
}
