package jsontext

// Validate returns nil when src is one JSON value with optional whitespace around it,
// else the first *SyntaxError, or a *DepthError for nesting beyond MaxDepth.
func Validate(src []byte) error {
	var r Reader
	r.Reset(src)
	if err := r.SkipValue(); err != nil {
		return err
	}
	return r.End()
}
