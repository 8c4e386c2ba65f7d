package bedrocksim

import (
	"bytes"
	"slices"

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

// maxSchemaDepth stops the argument builder on absurdly deep schemas.
const maxSchemaDepth = 32

// exampleArgs builds tool arguments from a JSON schema: every property in the order
// written (plus required names that have no property), strings "example" (or the first
// enum value, or a timestamp for format date-time), integers 42, numbers 1.5, booleans
// true, arrays one item, objects recursively. The result is a compact JSON object.
func exampleArgs(schema jsontext.Value) []byte {
	var buf bytes.Buffer
	members, ok := objectMembers(schema)
	if !ok {
		return []byte("{}")
	}
	writeObject(&buf, members, 0)
	return buf.Bytes()
}

func writeExample(buf *bytes.Buffer, schema jsontext.Value, depth int) {
	members, ok := objectMembers(schema)
	if !ok || depth > maxSchemaDepth {
		buf.WriteString(`"example"`)
		return
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
			buf.WriteString(`"example"`)
		}
	case "integer":
		buf.WriteString("42")
	case "number":
		buf.WriteString("1.5")
	case "boolean":
		buf.WriteString("true")
	case "null":
		buf.WriteString("null")
	case "array":
		buf.WriteByte('[')
		items, _ := lookup(members, "items")
		writeExample(buf, items, depth+1)
		buf.WriteByte(']')
	case "object":
		writeObject(buf, members, depth+1)
	default:
		// No type: the first alternative of anyOf/oneOf, else a string.
		for _, key := range []string{"anyOf", "oneOf"} {
			if v, ok := lookup(members, key); ok {
				if elems, ok := arrayElements(v); ok && len(elems) > 0 {
					writeExample(buf, elems[0], depth+1)
					return
				}
			}
		}
		buf.WriteString(`"example"`)
	}
}

// schemaType reads "type", taking the first non-null entry of a type list; an untyped schema
// with properties is an object.
func schemaType(members []member) string {
	v, ok := lookup(members, "type")
	if ok {
		var t string
		if json.Unmarshal(v, &t, lenient) == nil {
			return t
		}
		var ts []string
		if json.Unmarshal(v, &ts, lenient) == nil {
			for _, t := range ts {
				if t != "null" {
					return t
				}
			}
		}
	}
	if _, ok := lookup(members, "properties"); ok {
		return "object"
	}
	return ""
}

func writeObject(buf *bytes.Buffer, schema []member, depth int) {
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
			if seen[p.key] {
				continue
			}
			comma()
			seen[p.key] = true
			buf.Write(marshal(p.key))
			buf.WriteByte(':')
			writeExample(buf, p.value, depth)
		}
	}
	if raw, ok := lookup(schema, "required"); ok {
		elems, _ := arrayElements(raw)
		for _, e := range elems {
			var name string
			if json.Unmarshal(e, &name, lenient) != nil || seen[name] {
				continue
			}
			comma()
			seen[name] = true
			buf.Write(marshal(name))
			buf.WriteString(`:"example"`)
		}
	}
	buf.WriteByte('}')
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
