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

// Codes say which kind of refusal a RequestError is; OpenAI's API answers them as its
// error "code" (docs/PROTOCOL.md 10.5).
const (
	// CodeInvalidValue: a malformed body or a bad value.
	CodeInvalidValue = "invalid_value"
	// CodeUnsupportedParameter: a parameter the gateway cannot honour (n above 1, tools on a
	// model without tool use).
	CodeUnsupportedParameter = "unsupported_parameter"
	// CodeUnsupportedValue: a value the gateway cannot honour (a remote image URL, a tool
	// type other than function).
	CodeUnsupportedValue = "unsupported_value"
)

// RequestError is a request refused because of one field. Every refusal of a client's
// request, by a transport's decoder or by the translator, is one, so each surface can name
// the field in its own error shape.
type RequestError struct {
	// Err is the sentinel: ErrInvalidRequest, ErrUnsupported, or a transport's own.
	Err error
	// Param is the field's JSON path in the REST body's notation
	// ("messages[1].tool_calls[0].function.arguments"); empty when no one field is to blame.
	Param string
	// Code is one of the Code constants.
	Code string
	// Msg is the text after the sentinel; it starts with Param when Param is set.
	Msg string
}

func (e *RequestError) Error() string { return e.Err.Error() + ": " + e.Msg }
func (e *RequestError) Unwrap() error { return e.Err }

// Refuse returns a RequestError wrapping sentinel, with code and the message; the field is
// the path the message starts with (see LeadingPath).
func Refuse(sentinel error, code, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &RequestError{Err: sentinel, Param: LeadingPath(msg), Code: code, Msg: msg}
}

// invalidf refuses an invalid value, with a message that starts with the field's path.
func invalidf(format string, args ...any) error {
	return Refuse(ErrInvalidRequest, CodeInvalidValue, format, args...)
}

// unsupportedf refuses a value the gateway cannot honour, with a message that starts with
// the field's path.
func unsupportedf(format string, args ...any) error {
	return Refuse(ErrInvalidRequest, CodeUnsupportedValue, format, args...)
}

// LeadingPath is the field path a refusal's message starts with: "messages[2].role" of
// "messages[2].role is missing", "max_tokens" of "max_tokens must be at least 1", ""
// when the message starts with no path. Every refusal names its field first, so the path
// is written once, in the message.
func LeadingPath(msg string) string {
	end := 0
	for end < len(msg) {
		c := msg[end]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '[' || c == ']' {
			end++
			continue
		}
		break
	}
	if end < len(msg) && msg[end] != ' ' && msg[end] != ':' {
		return ""
	}
	return strings.TrimRight(msg[:end], ".")
}

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
	if err := v.Compact(jsontext.AllowDuplicateNames(false)); err != nil {
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
