package jsontext

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects. Recursion without a bound would let
// 10 MiB of '[' overflow the goroutine stack, which is fatal, not a recoverable panic.
// JSON Schemas in real tool definitions nest a few dozen levels.
const MaxDepth = 1000

// Kind is the JSON type of the next value, told from its first byte.
type Kind uint8

// The kinds Peek reports.
const (
	KindEOF     Kind = iota // no value: end of input
	KindNull                // null
	KindBool                // true or false
	KindNumber              // a number
	KindString              // a string
	KindArray               // an array
	KindObject              // an object
	KindInvalid             // a byte that starts no JSON value
)

var kindNames = [...]string{
	KindEOF:     "end of input",
	KindNull:    "null",
	KindBool:    "boolean",
	KindNumber:  "number",
	KindString:  "string",
	KindArray:   "array",
	KindObject:  "object",
	KindInvalid: "invalid JSON",
}

// String names the kind for messages: "end of input", "null", "boolean", "number",
// "string", "array", "object" or "invalid JSON".
func (k Kind) String() string { return kindNames[k] }

// SyntaxError is text that is not JSON.
type SyntaxError struct {
	// Msg says what is wrong: "invalid character '}' looking for beginning of object key
	// string", "unexpected end of input".
	Msg string
	// Offset is where, in bytes from the start of the input: the offending byte, or the
	// length of the input when it ends too early.
	Offset int
}

// Error returns Msg and Offset: "unexpected end of input at byte 12".
func (e *SyntaxError) Error() string { return e.Msg + " at byte " + strconv.Itoa(e.Offset) }

// DepthError is JSON whose arrays and objects nest deeper than MaxDepth: valid as far as
// it was read, but refused.
type DepthError struct {
	// Offset is the byte offset of the '[' or '{' that opens one level too many.
	Offset int
}

// Error returns "nests deeper than 1000 levels at byte N".
func (e *DepthError) Error() string {
	return "nests deeper than " + strconv.Itoa(MaxDepth) + " levels at byte " + strconv.Itoa(e.Offset)
}

// Reader is a minimal JSON reader over a complete text: it reads values in document
// order, so the caller decides per key what to expect. Peek tells the kind of the next
// value; the Read methods consume one value of the kind Peek reported; Enter, NextKey and
// NextElem walk arrays and objects; End checks that nothing follows the top-level value.
// Every method checks the syntax of what it consumes. The zero Reader reads an empty
// text; Reset starts another. It allocates only for the strings it returns. Not safe for
// concurrent use.
type Reader struct {
	data  []byte
	pos   int
	depth int
	buf   []byte // scratch for strings that need unescaping, and for CompactValue

	// While compacting (see appendCompact), the text before kept has been appended to
	// out without its whitespace.
	compacting bool
	out        []byte
	kept       int
}

// Reset makes r read data from its beginning. It keeps r's scratch buffer.
func (r *Reader) Reset(data []byte) {
	*r = Reader{data: data, buf: r.buf[:0]}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// skipSpace moves past whitespace. While compacting, it first copies the text before the
// whitespace to out. It is small enough to inline.
func (r *Reader) skipSpace() {
	start := r.pos
	for r.pos < len(r.data) && isSpace(r.data[r.pos]) {
		r.pos++
	}
	if r.pos > start && r.compacting {
		r.out = append(r.out, r.data[r.kept:start]...)
		r.kept = r.pos
	}
}

// Peek skips whitespace and tells the kind of the next value without consuming it.
func (r *Reader) Peek() Kind {
	r.skipSpace()
	if r.pos >= len(r.data) {
		return KindEOF
	}
	return kinds[r.data[r.pos]]
}

// kinds is the kind of the value each byte starts.
var kinds = func() (t [256]Kind) {
	for c := range t {
		t[c] = KindInvalid
	}
	for _, c := range "-0123456789" {
		t[c] = KindNumber
	}
	t['{'], t['['], t['"'], t['n'] = KindObject, KindArray, KindString, KindNull
	t['t'], t['f'] = KindBool, KindBool
	return t
}()

// unexpected is the syntax error for the byte at r.pos, or for the end of input.
func (r *Reader) unexpected(context string) error {
	if r.pos >= len(r.data) {
		return &SyntaxError{Msg: "unexpected end of input", Offset: len(r.data)}
	}
	msg := "invalid character " + quoteByte(r.data[r.pos])
	if context != "" {
		msg += " " + context
	}
	return &SyntaxError{Msg: msg, Offset: r.pos}
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}

// ValueError is the syntax error of a value Peek reported as KindEOF or KindInvalid:
// "unexpected end of input" or "invalid character 'x' looking for beginning of value".
func (r *Reader) ValueError() error {
	return r.unexpected("looking for beginning of value")
}

func (r *Reader) literal(lit string) error {
	end := min(r.pos+len(lit), len(r.data))
	for i := r.pos; i < end; i++ {
		if r.data[i] != lit[i-r.pos] {
			r.pos = i
			return r.unexpected("in literal " + lit)
		}
	}
	if end-r.pos < len(lit) {
		r.pos = end
		return r.unexpected("")
	}
	r.pos = end
	return nil
}

// ReadNull reads null; the caller has peeked KindNull.
func (r *Reader) ReadNull() error { return r.literal("null") }

// ReadBool reads true or false; the caller has peeked KindBool.
func (r *Reader) ReadBool() (bool, error) {
	if r.data[r.pos] == 't' {
		return true, r.literal("true")
	}
	return false, r.literal("false")
}

// ReadNumber returns the text of a number as written; the caller has peeked KindNumber.
// The result aliases the input.
func (r *Reader) ReadNumber() ([]byte, error) {
	start := r.pos
	d := r.data
	i := r.pos
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
		r.pos = i
		return nil, r.unexpected("in numeric literal")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			r.pos = i
			return nil, r.unexpected("after decimal point in numeric literal")
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
			r.pos = i
			return nil, r.unexpected("in exponent of numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	r.pos = i
	return d[start:i], nil
}

// scanString finds the end of the string starting at r.pos (a '"') and validates its
// escapes. It returns the index of the closing quote and whether the content needs
// rewriting (escapes, or bytes that are not valid UTF-8).
func (r *Reader) scanString() (end int, rewrite bool, err error) {
	d := r.data
	i := r.pos + 1
	ascii := true
	for i < len(d) {
		c := d[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			if !ascii && !rewrite && !utf8.Valid(d[r.pos+1:i]) {
				rewrite = true
			}
			return i, rewrite, nil
		case c == '\\':
			rewrite = true
			i++
			if i >= len(d) {
				r.pos = i
				return 0, false, r.unexpected("")
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(d) || !isHex(d[i]) {
						r.pos = i
						return 0, false, r.unexpected("in \\u escape")
					}
					i++
				}
			default:
				r.pos = i
				return 0, false, r.unexpected("in string escape code")
			}
		case c < 0x20:
			r.pos = i
			return 0, false, r.unexpected("in string literal")
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
	r.pos = i
	return 0, false, r.unexpected("")
}

// plain marks the bytes a string holds as they are: printable ASCII other than '"' and
// '\\'. Most strings and keys are made of them alone, and ReadString and NextKey read
// those without scanString.
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainEnd returns the index of the first byte of d from i on that is not plain.
func plainEnd(d []byte, i int) int {
	for i < len(d) && plain[d[i]] {
		i++
	}
	return i
}

// skipString consumes the string at r.pos without decoding it.
func (r *Reader) skipString() error {
	end, _, err := r.scanString()
	if err != nil {
		return err
	}
	r.pos = end + 1
	return nil
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

// ReadString returns the content of the string at the next value (the caller has peeked
// KindString). The result aliases the input or the Reader's scratch buffer: it is valid
// until the next ReadString or CompactValue. Invalid UTF-8 and lone surrogates become
// U+FFFD, as in encoding/json, so the result is always valid UTF-8.
func (r *Reader) ReadString() ([]byte, error) {
	// Most strings are plain ASCII, and returned as they are without scanString's call.
	if i := plainEnd(r.data, r.pos+1); i < len(r.data) && r.data[i] == '"' {
		raw := r.data[r.pos+1 : i]
		r.pos = i + 1
		return raw, nil
	}
	end, rewrite, err := r.scanString()
	if err != nil {
		return nil, err
	}
	raw := r.data[r.pos+1 : end]
	r.pos = end + 1
	if !rewrite {
		return raw, nil
	}
	b := r.buf[:0]
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
				u := hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(u) {
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if u2 := utf16.DecodeRune(u, hex4(raw[i+2:])); u2 != utf8.RuneError {
							b = utf8.AppendRune(b, u2)
							i += 6
							continue
						}
					}
					u = utf8.RuneError
				}
				b = utf8.AppendRune(b, u)
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
		u, size := utf8.DecodeRune(raw[i:])
		if u == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, raw[i:i+size]...)
		}
		i += size
	}
	r.buf = b
	return b, nil
}

func hex4(b []byte) rune {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}

// Enter consumes the '[' or '{' of the next value (the caller has peeked KindArray or
// KindObject); NextElem or NextKey then walk its contents. It refuses to go deeper than
// MaxDepth with a *DepthError.
func (r *Reader) Enter() error {
	if r.depth >= MaxDepth {
		return &DepthError{Offset: r.pos}
	}
	r.depth++
	r.pos++
	return nil
}

// NextKey advances to the next member of the object being read and returns its key
// (decoded as by ReadString), or ok=false once it has consumed the closing '}' or on an
// error. first is
// true for the first call after Enter. The key is valid until the next ReadString or
// CompactValue.
func (r *Reader) NextKey(first bool) (key []byte, ok bool, err error) {
	// The common case, compact text and a plain ASCII key (`"key":` after the '{', or
	// `,"key":`), is read here in one go.
	d, open := r.data, r.pos
	if !first && open < len(d) && d[open] == ',' {
		open++
	}
	if (first || open > r.pos) && open < len(d) && d[open] == '"' {
		if end := plainEnd(d, open+1); end+1 < len(d) && d[end] == '"' && d[end+1] == ':' {
			r.pos = end + 2
			return d[open+1 : end], true, nil
		}
	}
	if ok, err = r.nextMember(first); !ok || err != nil {
		return nil, false, err
	}
	if key, err = r.ReadString(); err != nil {
		return nil, false, err
	}
	if err = r.colon(); err != nil {
		return nil, false, err
	}
	return key, true, nil
}

// skipKey is NextKey without decoding the key.
func (r *Reader) skipKey(first bool) (ok bool, err error) {
	if ok, err = r.nextMember(first); !ok || err != nil {
		return false, err
	}
	if err = r.skipString(); err != nil {
		return false, err
	}
	return true, r.colon()
}

// nextMember advances to the opening quote of the next member's key, or reports false
// once it has consumed the closing '}'.
func (r *Reader) nextMember(first bool) (bool, error) {
	r.skipSpace()
	if first && r.pos < len(r.data) && r.data[r.pos] == '}' {
		r.pos++
		r.depth--
		return false, nil
	}
	if !first {
		if r.pos >= len(r.data) {
			return false, r.unexpected("")
		}
		switch r.data[r.pos] {
		case '}':
			r.pos++
			r.depth--
			return false, nil
		case ',':
			r.pos++
			r.skipSpace()
		default:
			return false, r.unexpected("after object member (want ',' or '}')")
		}
	}
	if r.pos >= len(r.data) || r.data[r.pos] != '"' {
		return false, r.unexpected("looking for beginning of object key string")
	}
	return true, nil
}

// colon consumes the ':' after a key.
func (r *Reader) colon() error {
	r.skipSpace()
	if r.pos >= len(r.data) || r.data[r.pos] != ':' {
		return r.unexpected("after object key (want ':')")
	}
	r.pos++
	return nil
}

// NextElem advances to the next element of the array being read, or reports false once
// it has consumed the closing ']'. first is true for the first call after Enter.
func (r *Reader) NextElem(first bool) (bool, error) {
	r.skipSpace()
	if r.pos >= len(r.data) {
		return false, r.unexpected("")
	}
	if r.data[r.pos] == ']' {
		if first {
			r.pos++
			r.depth--
			return false, nil
		}
	}
	if first {
		return true, nil
	}
	switch r.data[r.pos] {
	case ']':
		r.pos++
		r.depth--
		return false, nil
	case ',':
		r.pos++
		return true, nil
	default:
		return false, r.unexpected("after array element (want ',' or ']')")
	}
}

// SkipValue consumes one value of any type, checking its syntax.
func (r *Reader) SkipValue() error {
	switch k := r.Peek(); k {
	case KindNull:
		return r.ReadNull()
	case KindBool:
		_, err := r.ReadBool()
		return err
	case KindNumber:
		_, err := r.ReadNumber()
		return err
	case KindString:
		return r.skipString()
	case KindArray:
		if err := r.Enter(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := r.NextElem(first)
			if err != nil || !more {
				return err
			}
			if err := r.SkipValue(); err != nil {
				return err
			}
		}
	case KindObject:
		if err := r.Enter(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := r.skipKey(first)
			if err != nil || !more {
				return err
			}
			if err := r.SkipValue(); err != nil {
				return err
			}
		}
	default:
		return r.ValueError()
	}
}

// ReadValue consumes one value of any type and returns its text exactly as written,
// without the whitespace around it, bytes that are not valid UTF-8 included: what
// encoding/json stores in a json.RawMessage. The result aliases the input.
func (r *Reader) ReadValue() ([]byte, error) {
	r.skipSpace()
	start := r.pos
	if err := r.SkipValue(); err != nil {
		return nil, err
	}
	return r.data[start:r.pos], nil
}

// RawValue is ReadValue as a string, with invalid UTF-8 replaced by U+FFFD as in
// ReadString, so the text can live in a proto string.
func (r *Reader) RawValue() (string, error) {
	raw, err := r.ReadValue()
	if err != nil {
		return "", err
	}
	if !utf8.Valid(raw) {
		return string(toValidUTF8(raw)), nil
	}
	return string(raw), nil
}

// CompactValue consumes one value and returns its text without the whitespace between
// its tokens; strings are copied as written, escapes included. Invalid UTF-8 is replaced
// as in RawValue. The result does not alias the input.
func (r *Reader) CompactValue() (string, error) {
	b, err := r.appendCompact(r.buf[:0])
	if err != nil {
		return "", err
	}
	r.buf = b
	if !utf8.Valid(b) {
		return string(toValidUTF8(b)), nil
	}
	return string(b), nil
}

// appendCompact consumes one value, appending its text without insignificant whitespace
// to dst. dst may share memory with the input from its current position on: every byte
// is written at or behind the byte it was read from. SkipValue must not touch r.buf, which
// may be dst.
func (r *Reader) appendCompact(dst []byte) ([]byte, error) {
	r.skipSpace()
	r.compacting, r.out, r.kept = true, dst, r.pos
	err := r.SkipValue()
	dst = append(r.out, r.data[r.kept:r.pos]...)
	r.compacting, r.out = false, nil
	return dst, err
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

// End checks that nothing but whitespace follows the top-level value.
func (r *Reader) End() error {
	r.skipSpace()
	if r.pos < len(r.data) {
		return r.unexpected("after top-level value")
	}
	return nil
}
