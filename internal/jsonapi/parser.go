package jsonapi

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// maxDepth bounds the nesting of arrays and objects anywhere in a body. Recursion without
// a bound would let a 10 MiB body of '[' overflow the goroutine stack, which is fatal, not
// a recoverable panic. JSON Schemas in real tool definitions nest a few dozen levels.
const maxDepth = 1000

// kind is the JSON type of the next value, told from its first byte.
type kind uint8

const (
	kindEOF kind = iota // no value: end of input
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
	kindBad // a byte that starts no JSON value
)

var kindNames = [...]string{
	kindEOF:    "end of input",
	kindNull:   "null",
	kindBool:   "boolean",
	kindNumber: "number",
	kindString: "string",
	kindArray:  "array",
	kindObject: "object",
	kindBad:    "invalid JSON",
}

func (k kind) String() string { return kindNames[k] }

// syntaxError is a body that is not JSON. off < 0 means msg says it all (an empty body,
// too deep a nesting).
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string {
	if e.off < 0 {
		return e.msg
	}
	return "body is not valid JSON: " + e.msg + " at byte " + strconv.Itoa(e.off)
}

// fieldError is well-formed JSON of the wrong shape. path is filled in on the way out of
// the recursion (see inField and inIndex), so the happy path builds no path strings.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// inField prefixes a fieldError's path with an object key.
func inField(err error, name string) error {
	if fe, ok := err.(*fieldError); ok {
		switch {
		case fe.path == "":
			fe.path = name
		case fe.path[0] == '[':
			fe.path = name + fe.path
		default:
			fe.path = name + "." + fe.path
		}
	}
	return err
}

// inIndex prefixes a fieldError's path with an array index.
func inIndex(err error, i int) error {
	if fe, ok := err.(*fieldError); ok {
		seg := "[" + strconv.Itoa(i) + "]"
		switch {
		case fe.path == "" || fe.path[0] == '[':
			fe.path = seg + fe.path
		default:
			fe.path = seg + "." + fe.path
		}
	}
	return err
}

// parser is a minimal JSON reader over a complete body: it reads values in document
// order, so the caller decides per key what to expect and can name the exact path of a
// mismatch. It allocates only for the strings and structures it returns. Not safe for
// concurrent use.
type parser struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // scratch for strings that need unescaping
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func (p *parser) skipSpace() {
	for p.pos < len(p.data) && isSpace(p.data[p.pos]) {
		p.pos++
	}
}

// peek skips whitespace and tells the kind of the next value without consuming it.
func (p *parser) peek() kind {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return kindEOF
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return kindObject
	case c == '[':
		return kindArray
	case c == '"':
		return kindString
	case c == 't' || c == 'f':
		return kindBool
	case c == 'n':
		return kindNull
	case c == '-' || (c >= '0' && c <= '9'):
		return kindNumber
	default:
		return kindBad
	}
}

// unexpected is the syntax error for the byte at p.pos, or for the end of input.
func (p *parser) unexpected(context string) error {
	if p.pos >= len(p.data) {
		return &syntaxError{msg: "unexpected end of input", off: len(p.data)}
	}
	msg := "invalid character " + quoteByte(p.data[p.pos])
	if context != "" {
		msg += " " + context
	}
	return &syntaxError{msg: msg, off: p.pos}
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}

// wantErr is the shape error for the next value (which peek has classified as k), or a
// syntax error when there is no value at all.
func (p *parser) wantErr(want string, k kind) error {
	if k == kindEOF || k == kindBad {
		return p.unexpected("looking for beginning of value")
	}
	return &fieldError{msg: "want " + want + ", got " + k.String()}
}

func (p *parser) literal(lit string) error {
	end := p.pos + len(lit)
	if end > len(p.data) {
		end = len(p.data)
	}
	for i := p.pos; i < end; i++ {
		if p.data[i] != lit[i-p.pos] {
			p.pos = i
			return p.unexpected("in literal " + lit)
		}
	}
	if end-p.pos < len(lit) {
		p.pos = end
		return p.unexpected("")
	}
	p.pos = end
	return nil
}

// readBool reads true or false; the caller has peeked kindBool.
func (p *parser) readBool() (bool, error) {
	if p.data[p.pos] == 't' {
		return true, p.literal("true")
	}
	return false, p.literal("false")
}

// readNumber returns the raw text of a number; the caller has peeked kindNumber.
func (p *parser) readNumber() ([]byte, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.unexpected("in numeric literal")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.unexpected("after decimal point in numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.unexpected("in exponent of numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	return d[start:i], nil
}

// scanString finds the end of the string starting at p.pos (a '"') and validates its
// escapes. It returns the index of the closing quote and whether the content needs
// rewriting (escapes, or bytes that are not valid UTF-8).
func (p *parser) scanString() (end int, rewrite bool, err error) {
	d := p.data
	i := p.pos + 1
	ascii := true
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			if !ascii && !rewrite && !utf8.Valid(d[p.pos+1:i]) {
				rewrite = true
			}
			return i, rewrite, nil
		case c == '\\':
			rewrite = true
			i++
			if i >= len(d) {
				p.pos = i
				return 0, false, p.unexpected("")
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(d) || !isHex(d[i]) {
						p.pos = i
						return 0, false, p.unexpected("in \\u escape")
					}
					i++
				}
			default:
				p.pos = i
				return 0, false, p.unexpected("in string escape code")
			}
		case c < 0x20:
			p.pos = i
			return 0, false, p.unexpected("in string literal")
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
	p.pos = i
	return 0, false, p.unexpected("")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c >= 'a':
		return rune(c - 'a' + 10)
	default:
		return rune(c - 'A' + 10)
	}
}

// readString returns the content of the string at p.pos (the caller has peeked
// kindString). The result aliases the body or the parser's scratch buffer: it is valid
// until the next readString. Invalid UTF-8 and lone surrogates become U+FFFD, as in
// encoding/json, so every string handed to a proto is valid UTF-8 (proto3 requires it).
func (p *parser) readString() ([]byte, error) {
	end, rewrite, err := p.scanString()
	if err != nil {
		return nil, err
	}
	raw := p.data[p.pos+1 : end]
	p.pos = end + 1
	if !rewrite {
		return raw, nil
	}
	b := p.buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c == '\\' {
			switch raw[i+1] {
			case '"', '\\', '/':
				b = append(b, raw[i+1])
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if r2 := utf16.DecodeRune(r, hex4(raw[i+2:])); r2 != utf8.RuneError {
							b = utf8.AppendRune(b, r2)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, raw[i:i+size]...)
		}
		i += size
	}
	p.buf = b
	return b, nil
}

func hex4(b []byte) rune {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}

// enter consumes the '{' or '[' at p.pos.
func (p *parser) enter() error {
	if p.depth >= maxDepth {
		// Valid JSON, but beyond what RFC 8259 section 9 lets a parser refuse.
		return &syntaxError{msg: "body nests deeper than " + strconv.Itoa(maxDepth) + " levels at byte " + strconv.Itoa(p.pos), off: -1}
	}
	p.depth++
	p.pos++
	return nil
}

// nextKey advances to the next member of the object being read and returns its key, or
// ok=false once it has consumed the closing '}'. first is true for the first call after
// enter. The key is valid until the next readString.
func (p *parser) nextKey(first bool) (key []byte, ok bool, err error) {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		if first {
			p.pos++
			p.depth--
			return nil, false, nil
		}
	}
	if !first {
		if p.pos >= len(p.data) {
			return nil, false, p.unexpected("")
		}
		switch p.data[p.pos] {
		case '}':
			p.pos++
			p.depth--
			return nil, false, nil
		case ',':
			p.pos++
			p.skipSpace()
		default:
			return nil, false, p.unexpected("after object member (want ',' or '}')")
		}
	}
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return nil, false, p.unexpected("looking for beginning of object key string")
	}
	if key, err = p.readString(); err != nil {
		return nil, false, err
	}
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != ':' {
		return nil, false, p.unexpected("after object key (want ':')")
	}
	p.pos++
	return key, true, nil
}

// nextElem advances to the next element of the array being read, or reports false once
// it has consumed the closing ']'.
func (p *parser) nextElem(first bool) (bool, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return false, p.unexpected("")
	}
	if p.data[p.pos] == ']' {
		if first {
			p.pos++
			p.depth--
			return false, nil
		}
	}
	if first {
		return true, nil
	}
	switch p.data[p.pos] {
	case ']':
		p.pos++
		p.depth--
		return false, nil
	case ',':
		p.pos++
		return true, nil
	default:
		return false, p.unexpected("after array element (want ',' or ']')")
	}
}

// skipValue consumes one value of any type, checking its syntax.
func (p *parser) skipValue() error {
	switch k := p.peek(); k {
	case kindNull:
		return p.literal("null")
	case kindBool:
		_, err := p.readBool()
		return err
	case kindNumber:
		_, err := p.readNumber()
		return err
	case kindString:
		end, _, err := p.scanString()
		if err != nil {
			return err
		}
		p.pos = end + 1
		return nil
	case kindArray:
		if err := p.enter(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := p.nextElem(first)
			if err != nil || !more {
				return err
			}
			if err := p.skipValue(); err != nil {
				return err
			}
		}
	case kindObject:
		if err := p.enter(); err != nil {
			return err
		}
		for first := true; ; first = false {
			_, more, err := p.nextKey(first)
			if err != nil || !more {
				return err
			}
			if err := p.skipValue(); err != nil {
				return err
			}
		}
	default:
		return p.unexpected("looking for beginning of value")
	}
}

// rawValue consumes one value and returns its text exactly as written (no surrounding
// whitespace), with invalid UTF-8 replaced so it can live in a proto string.
func (p *parser) rawValue() (string, error) {
	p.skipSpace()
	start := p.pos
	if err := p.skipValue(); err != nil {
		return "", err
	}
	raw := p.data[start:p.pos]
	if !utf8.Valid(raw) {
		return string(toValidUTF8(raw)), nil
	}
	return string(raw), nil
}

// compactText returns raw, one complete JSON value already checked by skipValue, as a
// string without the whitespace between its tokens; strings are copied as written,
// escapes included. Invalid UTF-8 is replaced as in rawValue, so the text can live in a
// proto string. The result does not alias the body.
func (p *parser) compactText(raw []byte) string {
	if !utf8.Valid(raw) {
		raw = toValidUTF8(raw)
	}
	p.buf = appendCompact(p.buf[:0], raw)
	return string(p.buf)
}

// appendCompact appends raw, valid JSON, to dst without the whitespace outside strings.
func appendCompact(dst, raw []byte) []byte {
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			if c == '\\' {
				i++ // the escaped byte cannot end the string
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case isSpace(c):
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}

// toValidUTF8 replaces each byte that is not part of valid UTF-8 by U+FFFD, byte by byte
// like encoding/json (strings.ToValidUTF8 would collapse runs into one).
func toValidUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// validate reports the first syntax error of a whole body, or nil.
func validate(body []byte) error {
	p := parser{data: body}
	if err := p.skipValue(); err != nil {
		return err
	}
	return p.end()
}

// end checks that nothing but whitespace follows the top-level value.
func (p *parser) end() error {
	p.skipSpace()
	if p.pos < len(p.data) {
		return p.unexpected("after top-level value")
	}
	return nil
}

// readStringValue reads a string; null reads as "".
func (p *parser) readStringValue() (string, error) {
	switch k := p.peek(); k {
	case kindString:
		b, err := p.readString()
		return string(b), err
	case kindNull:
		return "", p.literal("null")
	default:
		return "", p.wantErr("a string", k)
	}
}

// readStructValue reads any JSON value as a structpb.Value.
func (p *parser) readStructValue() (*structpb.Value, error) {
	switch k := p.peek(); k {
	case kindNull:
		return structpb.NewNullValue(), p.literal("null")
	case kindBool:
		b, err := p.readBool()
		return structpb.NewBoolValue(b), err
	case kindNumber:
		raw, err := p.readNumber()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			// The syntax is already checked, so this is a range error: protojson could
			// not write ±Inf back out, so refuse it here.
			return nil, &fieldError{msg: "number " + string(raw) + " is out of range"}
		}
		return structpb.NewNumberValue(f), nil
	case kindString:
		b, err := p.readString()
		if err != nil {
			return nil, err
		}
		return structpb.NewStringValue(string(b)), nil
	case kindArray:
		l, err := p.readList()
		if err != nil {
			return nil, err
		}
		return structpb.NewListValue(l), nil
	case kindObject:
		s, err := p.readStruct()
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	default:
		return nil, p.unexpected("looking for beginning of value")
	}
}

// readList reads an array (the caller has peeked kindArray) as a structpb.ListValue.
func (p *parser) readList() (*structpb.ListValue, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	l := &structpb.ListValue{}
	for i := 0; ; i++ {
		more, err := p.nextElem(i == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return l, nil
		}
		v, err := p.readStructValue()
		if err != nil {
			return nil, inIndex(err, i)
		}
		l.Values = append(l.Values, v)
	}
}

// readStruct reads an object (the caller has peeked kindObject) as a structpb.Struct. A
// repeated key keeps its last value, as in encoding/json.
func (p *parser) readStruct() (*structpb.Struct, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for first := true; ; first = false {
		kb, more, err := p.nextKey(first)
		if err != nil {
			return nil, err
		}
		if !more {
			return s, nil
		}
		key := string(kb)
		v, err := p.readStructValue()
		if err != nil {
			return nil, inField(err, key)
		}
		s.Fields[key] = v
	}
}
