package bedrocksim

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// member is one key of a JSON object, in the order written.
type member struct {
	key   string
	value jsontext.Value
}

// objectMembers reads a JSON object keeping its key order, which a map would lose; answers
// built from a schema must come out byte for byte the same every time. ok is false when raw
// is not a JSON object.
func objectMembers(raw jsontext.Value) (members []member, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), lenient)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		key := name.String() // before ReadValue, which voids the token
		value, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		members = append(members, member{key, value.Clone()})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	return members, true
}

// arrayElements splits a JSON array; ok is false when raw is not one.
func arrayElements(raw jsontext.Value) (elems []jsontext.Value, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), lenient)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	for dec.PeekKind() != ']' {
		value, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		elems = append(elems, value.Clone())
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	return elems, true
}

func lookup(members []member, key string) (jsontext.Value, bool) {
	for _, m := range members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// jsonKind names the type of a JSON value the way Bedrock's schema validator does.
func jsonKind(raw jsontext.Value) string {
	switch raw.Kind() {
	case '{':
		return "JSONObject"
	case '[':
		return "JSONArray"
	case '"':
		return "String"
	case 't', 'f':
		return "Boolean"
	case '0':
		return "Number"
	}
	return "null"
}

// maxSchemaDepth stops the argument builder on absurdly deep (or, through $ref, recursive)
// schemas.
const maxSchemaDepth = 32

// maxExampleItems bounds the items an example array gets for a minItems.
const maxExampleItems = 64

// exampleArgs builds tool arguments, or a structured-output answer, from a JSON schema: every
// property in the order written (plus required names that have no property), strings
// "example" (or the first enum value, or a timestamp for format date-time), integers 42,
// numbers 1.5, booleans true, arrays one item, objects recursively. Local $refs ("#/$defs/x")
// are followed, and the value keeps within the schema's own bounds where it can: minimum,
// maximum and their exclusive forms, an integer multipleOf, minLength, maxLength, minItems,
// maxItems and prefixItems; so what it builds is an instance of the schema (pattern, and
// format beyond the date forms, are not honoured). A $ref met again inside itself (a
// recursive schema) gets objects with their required properties only, so the recursion
// ends where the schema lets it. The result is a compact JSON object.
func exampleArgs(schema jsontext.Value) []byte {
	members, ok := objectMembers(schema)
	if !ok {
		return []byte("{}")
	}
	e := example{root: schema}
	e.object(members, 0, false)
	return e.buf.Bytes()
}

// quotedArgs builds tool arguments for a task that quotes a value (quoted): the schema's
// required properties only, as exampleArgs builds them, but the first of type string (no enum
// or const) is the quoted value, as a model asked to run `ls -la` passes that command and
// leaves the options alone (Claude Code's Bash tool would otherwise run it in the background,
// unsandboxed, with a timeout of 1.5 ms).
func quotedArgs(schema jsontext.Value, quote string) []byte {
	members, ok := objectMembers(schema)
	if !ok {
		return []byte("{}")
	}
	e := example{root: schema, quote: quote}
	e.object(members, 0, true)
	return e.buf.Bytes()
}

// maxExampleBytes bounds what exampleArgs writes: past it, every value is "example", as past
// maxSchemaDepth.
const maxExampleBytes = 64 << 10

// example writes a value for a schema.
type example struct {
	buf bytes.Buffer
	// root is the whole schema, which local $refs point into.
	root jsontext.Value
	// refs are the $refs being followed, outermost first.
	refs []string
	// resolved caches what each $ref points to.
	resolved map[string]jsontext.Value
	// quote is the value of the top object's first required string property, until written
	// (quotedArgs).
	quote string
}

// value writes a value for schema. lean: objects get their required properties only.
func (e *example) value(schema jsontext.Value, depth int, lean bool) {
	buf := &e.buf
	members, ok := objectMembers(schema)
	if !ok || depth > maxSchemaDepth || buf.Len() > maxExampleBytes {
		buf.WriteString(`"example"`)
		return
	}
	if ref, ok := lookup(members, "$ref"); ok {
		s, _ := stringValue(ref)
		target, ok := e.resolved[s]
		if !ok {
			target, _ = resolveRef(e.root, ref)
			if e.resolved == nil {
				e.resolved = map[string]jsontext.Value{}
			}
			e.resolved[s] = target // nil when it does not resolve
		}
		if target != nil {
			e.refs = append(e.refs, s)
			e.value(target, depth+1, lean || slices.Contains(e.refs[:len(e.refs)-1], s))
			e.refs = e.refs[:len(e.refs)-1]
			return
		}
	}
	for _, key := range []string{"const", "enum", "examples"} {
		v, ok := lookup(members, key)
		if !ok {
			continue
		}
		if key == "const" {
			writeCompact(buf, v)
			return
		}
		if elems, ok := arrayElements(v); ok && len(elems) > 0 {
			writeCompact(buf, elems[0])
			return
		}
	}
	switch schemaType(members) {
	case "string":
		format, _ := lookup(members, "format")
		switch string(bytes.TrimSpace(format)) {
		case `"date-time"`:
			buf.WriteString(`"2025-01-01T12:00:00Z"`)
		case `"date"`:
			buf.WriteString(`"2025-01-01"`)
		default:
			buf.Write(marshal(exampleString(members)))
		}
	case "integer":
		buf.WriteString(exampleNumber(members, true))
	case "number":
		buf.WriteString(exampleNumber(members, false))
	case "boolean":
		buf.WriteString("true")
	case "null":
		buf.WriteString("null")
	case "array":
		e.array(members, depth, lean)
	case "object":
		e.object(members, depth+1, lean)
	default:
		// No type: the first alternative of anyOf/oneOf/allOf, else a string.
		for _, key := range []string{"anyOf", "oneOf", "allOf"} {
			if v, ok := lookup(members, key); ok {
				if elems, ok := arrayElements(v); ok && len(elems) > 0 {
					e.value(elems[0], depth+1, lean)
					return
				}
			}
		}
		buf.WriteString(`"example"`)
	}
}

// resolveRef follows a local $ref ("#", "#/$defs/x", "#/definitions/x/properties/y") in root.
func resolveRef(root, ref jsontext.Value) (jsontext.Value, bool) {
	s, ok := stringValue(ref)
	if !ok {
		return nil, false
	}
	pointer, ok := strings.CutPrefix(s, "#")
	if !ok {
		return nil, false // a remote reference
	}
	v := root
	if pointer == "" {
		return v, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, false // an anchor
	}
	for _, token := range strings.Split(pointer[1:], "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		switch v.Kind() {
		case '{':
			members, _ := objectMembers(v)
			if v, ok = lookup(members, token); !ok {
				return nil, false
			}
		case '[':
			elems, _ := arrayElements(v)
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(elems) {
				return nil, false
			}
			v = elems[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// exampleString is "example", padded with x or cut to keep within minLength and maxLength.
func exampleString(members []member) string {
	s := "example"
	if n, ok := numberOf(members, "maxLength"); ok && n >= 0 && float64(len(s)) > n {
		s = s[:int(n)]
	}
	if n, ok := numberOf(members, "minLength"); ok && float64(len(s)) < n {
		s += strings.Repeat("x", min(int(n), 1<<16)-len(s))
	}
	return s
}

// exampleNumber is 42 (integer) or 1.5 (number), or when the schema's bounds exclude it the
// value nearest the lower bound (else the upper) that they take, as a JSON number.
func exampleNumber(members []member, integer bool) string {
	v := 1.5
	if integer {
		v = 42
	}
	lo, hasLo := numberOf(members, "minimum")
	hi, hasHi := numberOf(members, "maximum")
	loExcl, hiExcl := false, false
	if x, ok := numberOf(members, "exclusiveMinimum"); ok && (!hasLo || x >= lo) {
		lo, hasLo, loExcl = x, true, true
	}
	if x, ok := numberOf(members, "exclusiveMaximum"); ok && (!hasHi || x <= hi) {
		hi, hasHi, hiExcl = x, true, true
	}
	step, hasStep := numberOf(members, "multipleOf")
	hasStep = hasStep && step > 0 && (!integer || step == math.Trunc(step))
	fits := func(x float64) bool {
		return (!hasLo || x > lo || x == lo && !loExcl) && (!hasHi || x < hi || x == hi && !hiExcl) &&
			(!integer || x == math.Trunc(x)) && (!hasStep || math.Abs(x/step-math.Round(x/step)) < 1e-9)
	}
	if !fits(v) {
		var candidates []float64
		switch {
		case integer && hasStep && hasLo:
			candidates = append(candidates, math.Ceil(lo/step)*step, (math.Floor(lo/step)+1)*step)
		case integer && hasStep && hasHi:
			candidates = append(candidates, math.Floor(hi/step)*step, (math.Ceil(hi/step)-1)*step)
		case integer && hasLo:
			candidates = append(candidates, math.Ceil(lo), math.Floor(lo)+1)
		case integer && hasHi:
			candidates = append(candidates, math.Floor(hi), math.Ceil(hi)-1)
		case hasStep && hasLo:
			candidates = append(candidates, math.Ceil(lo/step)*step, (math.Floor(lo/step)+1)*step)
		case hasStep && hasHi:
			candidates = append(candidates, math.Floor(hi/step)*step, (math.Ceil(hi/step)-1)*step)
		case hasStep:
			candidates = append(candidates, math.Round(v/step)*step, step)
		case hasLo && hasHi:
			candidates = append(candidates, lo+(hi-lo)/2)
		case hasLo:
			candidates = append(candidates, lo, lo+1)
		case hasHi:
			candidates = append(candidates, hi, hi-1)
		}
		for _, c := range candidates {
			if fits(c) {
				v = c
				break
			}
		}
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// numberOf reads a numeric keyword of a schema.
func numberOf(members []member, key string) (float64, bool) {
	raw, ok := lookup(members, key)
	if !ok || raw.Kind() != '0' {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// array writes prefixItems, then items up to one (or minItems, or none under maxItems 0).
func (e *example) array(members []member, depth int, lean bool) {
	var prefix []jsontext.Value
	if v, ok := lookup(members, "prefixItems"); ok {
		prefix, _ = arrayElements(v)
	}
	n := max(1, len(prefix))
	if m, ok := numberOf(members, "minItems"); ok && m > float64(n) {
		n = int(min(m, maxExampleItems))
	}
	if m, ok := numberOf(members, "maxItems"); ok && m >= 0 && m < float64(n) {
		n = int(m)
	}
	items, _ := lookup(members, "items")
	e.buf.WriteByte('[')
	for i := range n {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		if i < len(prefix) {
			e.value(prefix[i], depth+1, lean)
		} else {
			e.value(items, depth+1, lean)
		}
	}
	e.buf.WriteByte(']')
}

// schemaType reads "type", taking the first non-null entry of a type list; an untyped schema
// with properties is an object.
func schemaType(members []member) string {
	if ts := schemaTypes(members); len(ts) > 0 {
		for _, t := range ts {
			if t != "null" {
				return t
			}
		}
		return ts[0]
	}
	if _, ok := lookup(members, "properties"); ok {
		return "object"
	}
	return ""
}

// schemaTypes is the schema's "type", a name or a list of names; nil when absent.
func schemaTypes(members []member) []string {
	v, ok := lookup(members, "type")
	if !ok {
		return nil
	}
	var t string
	if json.Unmarshal(v, &t, lenient) == nil {
		return []string{t}
	}
	var ts []string
	if json.Unmarshal(v, &ts, lenient) == nil {
		return ts
	}
	return nil
}

// object writes the properties of an object schema, and its required names without a
// property as strings; lean: the required ones only.
func (e *example) object(schema []member, depth int, lean bool) {
	buf := &e.buf
	var required []string
	if raw, ok := lookup(schema, "required"); ok {
		elems, _ := arrayElements(raw)
		for _, el := range elems {
			if name, ok := stringValue(el); ok {
				required = append(required, name)
			}
		}
	}
	buf.WriteByte('{')
	seen := map[string]bool{}
	comma := func() {
		if len(seen) > 0 {
			buf.WriteByte(',')
		}
	}
	if raw, ok := lookup(schema, "properties"); ok {
		props, _ := objectMembers(raw)
		for _, p := range props {
			if seen[p.key] || lean && !slices.Contains(required, p.key) {
				continue
			}
			comma()
			seen[p.key] = true
			buf.Write(marshal(p.key))
			buf.WriteByte(':')
			if e.quote != "" && depth == 0 && slices.Contains(required, p.key) && plainString(p.value) {
				buf.Write(marshal(e.quote))
				e.quote = ""
				continue
			}
			e.value(p.value, depth, lean)
		}
	}
	for _, name := range required {
		if seen[name] {
			continue
		}
		comma()
		seen[name] = true
		buf.Write(marshal(name))
		buf.WriteString(`:"example"`)
	}
	buf.WriteByte('}')
}

// plainString reports whether schema is of type string with no enum, const or $ref.
func plainString(schema jsontext.Value) bool {
	members, ok := objectMembers(schema)
	if !ok || schemaType(members) != "string" {
		return false
	}
	for _, key := range []string{"enum", "const", "$ref"} {
		if _, ok := lookup(members, key); ok {
			return false
		}
	}
	return true
}

// writeCompact copies a JSON value from a schema without its whitespace, digits and escapes
// as written.
func writeCompact(buf *bytes.Buffer, raw jsontext.Value) {
	v := slices.Clone(raw)
	if v.Compact() != nil {
		buf.WriteString("null")
		return
	}
	buf.Write(v)
}

// breakCalls returns calls with the arguments of each call of a tool that is not strict
// broken against its schema (breakArgs), or nil when no call can be broken: the
// invalid_tool_args fault. A strict tool's calls always follow its schema (docs/BEDROCK.md I5).
func breakCalls(tc *toolConfiguration, calls []toolCall) []toolCall {
	var out []toolCall
	broke := false
	for _, c := range calls {
		if spec := toolSpec(tc, c.Name); spec != nil && !spec.strict() {
			if b := breakArgs(spec.InputSchema.JSON, c.Input); b != nil {
				c.Input, broke = b, true
			}
		}
		out = append(out, c)
	}
	if !broke {
		return nil
	}
	return out
}

// breakArgs returns args (a JSON object) changed so that they break schema, the same way every
// time: the first required property present removed; else the first property present whose
// schema declares a type given a value of another, the string "example" where the types have
// no string, the number 42 where they have a string and no number or integer. nil when neither
// applies (no required property, no typed property).
func breakArgs(schema, args jsontext.Value) jsontext.Value {
	sm, ok := objectMembers(schema)
	am, ok2 := objectMembers(args)
	if !ok || !ok2 {
		return nil
	}
	index := func(name string) int {
		return slices.IndexFunc(am, func(m member) bool { return m.key == name })
	}
	if raw, ok := lookup(sm, "required"); ok {
		elems, _ := arrayElements(raw)
		for _, e := range elems {
			name, _ := stringValue(e)
			if i := index(name); i >= 0 {
				return writeMembers(slices.Delete(slices.Clone(am), i, i+1))
			}
		}
	}
	props, _ := lookup(sm, "properties")
	pm, _ := objectMembers(props)
	for _, p := range pm {
		i := index(p.key)
		if i < 0 {
			continue
		}
		if wrong := wrongValue(schema, p.value); wrong != nil {
			changed := slices.Clone(am)
			changed[i].value = wrong
			return writeMembers(changed)
		}
	}
	return nil
}

// wrongValue is a value whose type the property schema does not take (a local $ref followed
// once, in root), or nil when the schema declares no type or takes both strings and numbers.
func wrongValue(root, schema jsontext.Value) jsontext.Value {
	members, _ := objectMembers(schema)
	if ref, ok := lookup(members, "$ref"); ok {
		if target, ok := resolveRef(root, ref); ok {
			members, _ = objectMembers(target)
		}
	}
	types := schemaTypes(members)
	switch {
	case len(types) == 0:
		return nil
	case !slices.Contains(types, "string"):
		return jsontext.Value(`"example"`)
	case !slices.Contains(types, "number") && !slices.Contains(types, "integer"):
		return jsontext.Value(`42`)
	}
	return nil
}

// writeMembers writes an object of members, in their order, compact.
func writeMembers(members []member) jsontext.Value {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(marshal(m.key))
		buf.WriteByte(':')
		writeCompact(&buf, m.value)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}
