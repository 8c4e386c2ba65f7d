// Package jsonenc holds the gateway's hand-written JSON string escaping, shared by the
// encoders of every wire (REST, Converse) without one depending on the other.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string and returns the extended buffer. It is
// the gateway's one JSON string escaper: the REST encoders, the translator's schema writer
// and the Converse request encoder use it. Unlike encoding/json it does not escape <, > and & (these bodies
// are never embedded in HTML, and Bedrock must see the client's text as written) and keeps
// non-ASCII text as raw UTF-8; it escapes '"', '\\', control characters (\b \f \n \r \t,
// else \u00XX) and U+2028 / U+2029, which JSON allows raw but JavaScript string literals
// before ES2019 do not. Bytes that are not valid UTF-8 become U+FFFD, so the output is
// always valid JSON. It allocates only when dst must grow.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
