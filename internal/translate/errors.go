package translate

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Sentinels core.Classify maps to statuses (docs/PROTOCOL.md section 5). Every error this package
// returns wraps exactly one of them; the text after the sentinel is meant for the client and
// names the offending field by its 0-based JSON path, e.g.
// "invalid request: messages[3].tool_calls[0].function.arguments is not valid JSON: …".
var (
	// ErrInvalidRequest: the client's request cannot be translated into a valid Converse
	// request. 400 / InvalidArgument.
	ErrInvalidRequest = errors.New("invalid request")

	// ErrUnsupported: the request is well formed but asks for something the chosen model
	// cannot do (tools on a model without tool use). 400 / InvalidArgument; the message names
	// the model.
	ErrUnsupported = errors.New("unsupported")

	// ErrUpstream: Bedrock answered 200 but the answer is unusable (no output, a
	// malformed_model_output / malformed_tool_use stop, a tool input that is not a JSON
	// object). 502 / Unavailable.
	ErrUpstream = errors.New("upstream error")
)

// invalidf wraps ErrInvalidRequest with a message naming the field.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRequest}, args...)...)
}

// unsupportedf is invalidf for a value the gateway does not take although OpenAI's API
// does (a remote image URL, a file_id, an audio part, a document format Bedrock lacks). The
// error wraps ErrInvalidRequest, and its UnsupportedValue method tells a surface that
// distinguishes the two (OpenAI's unsupported_value) which it is:
//
//	var u interface{ UnsupportedValue() bool }
//	if errors.As(err, &u) && u.UnsupportedValue() { … }
func unsupportedf(format string, args ...any) error {
	return &unsupportedError{invalidf(format, args...)}
}

type unsupportedError struct{ error }

func (e *unsupportedError) Unwrap() error          { return e.error }
func (e *unsupportedError) UnsupportedValue() bool { return true }

// upstreamf wraps ErrUpstream with a message a person can act on.
func upstreamf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUpstream}, args...)...)
}

// JSONErrorText words a JSON syntax error of json/v2 as the end of a message about a field
// or a body: "is not valid JSON: unexpected end of input at byte 12", or "nests deeper
// than 10000 levels at byte 10004" for JSON past json/v2's depth limit.
func JSONErrorText(err error) string {
	var sy *jsontext.SyntacticError
	if !errors.As(err, &sy) {
		return "is not valid JSON: " + err.Error()
	}
	at := " at byte " + strconv.FormatInt(sy.ByteOffset, 10)
	what := sy.Err.Error()
	switch {
	case errors.Is(sy.Err, io.ErrUnexpectedEOF):
		what = "unexpected end of input"
	case strings.Contains(what, "exceeded max depth"):
		return "nests deeper than 10000 levels" + at
	}
	return "is not valid JSON: " + what + at
}

// compactJSON validates b, which the caller owns, and compacts it in place: the whitespace
// between tokens goes, everything else (key order, string escapes, number spelling) stays
// as written, so a client's JSON reaches Bedrock byte for byte and numbers never pass
// through float64.
func compactJSON(b []byte) ([]byte, error) {
	v := jsontext.Value(b)
	if err := v.Compact(); err != nil {
		return nil, err
	}
	return v, nil
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
