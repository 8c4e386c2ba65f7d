package bedrocksim

import (
	"bytes"
	"encoding/json"
)

// member is one key of a JSON object, in the order written.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers reads a JSON object keeping its key order, which a map would lose; answers
// built from a schema must come out byte for byte the same every time. ok is false when raw
// is not a JSON object.
func objectMembers(raw []byte) (members []member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		members = append(members, member{key, value})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	return members, true
}

// arrayElements splits a JSON array; ok is false when raw is not one.
func arrayElements(raw []byte) (elems []json.RawMessage, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, false
	}
	return elems, true
}

func lookup(members []member, key string) (json.RawMessage, bool) {
	for _, m := range members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// jsonKind names the type of a JSON value the way Bedrock's schema validator does.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "null"
	}
	switch raw[0] {
	case '{':
		return "JSONObject"
	case '[':
		return "JSONArray"
	case '"':
		return "String"
	case 't', 'f':
		return "Boolean"
	case 'n':
		return "null"
	}
	return "Number"
}

// maxSchemaDepth stops the argument builder on absurdly deep schemas.
const maxSchemaDepth = 32

// exampleArgs builds tool arguments from a JSON schema: every property in the order
// written (plus required names that have no property), strings "example" (or the first
// enum value, or a timestamp for format date-time), integers 42, numbers 1.5, booleans
// true, arrays one item, objects recursively. The result is a compact JSON object.
func exampleArgs(schema []byte) []byte {
	var buf bytes.Buffer
	members, ok := objectMembers(schema)
	if !ok {
		return []byte("{}")
	}
	writeObject(&buf, members, 0)
	return buf.Bytes()
}

func writeExample(buf *bytes.Buffer, schema json.RawMessage, depth int) {
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
		if json.Unmarshal(v, &t) == nil {
			return t
		}
		var ts []string
		if json.Unmarshal(v, &ts) == nil {
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
		var required []string
		_ = json.Unmarshal(raw, &required)
		for _, name := range required {
			if seen[name] {
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

func writeCompact(buf *bytes.Buffer, raw json.RawMessage) {
	if json.Compact(buf, raw) != nil {
		buf.WriteString("null")
	}
}
