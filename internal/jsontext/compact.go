package jsontext

// Compact checks that src is one JSON value, with optional whitespace around it, and
// appends it to dst without insignificant whitespace: the bytes of strings (escapes,
// non-ASCII and invalid UTF-8 alike) and of numbers are copied as written, as
// encoding/json's Compact does. It returns the extended dst, or dst unchanged and a
// *SyntaxError or *DepthError (nesting beyond MaxDepth, which encoding/json accepts up
// to 10000).
//
// dst may be src[:0], to compact in place: every byte is written at or behind the byte it
// was read from. Otherwise dst must not share memory with src. After an error, src
// compacted in place holds an unspecified mix of its old and new bytes.
func Compact(dst, src []byte) ([]byte, error) {
	var r Reader
	r.Reset(src)
	out, err := r.appendCompact(dst)
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}
