package fault

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Sentinels of a refused request (docs/PROTOCOL.md 5). Every refusal is a RequestError
// wrapping one of them; the text after the sentinel is meant for the client and names the
// offending field by its 0-based JSON path, e.g.
// "invalid request: messages[3].tool_calls[0].function.arguments is not valid JSON: …".
var (
	// ErrInvalidBody: the body cannot be read as the surface's JSON: not JSON, or a known
	// member of the wrong JSON type.
	ErrInvalidBody = errors.New("invalid request body")

	// ErrInvalidRequest: the client's request cannot be translated into a valid Converse
	// request.
	ErrInvalidRequest = errors.New("invalid request")

	// ErrUnsupported: the request is well formed but asks for something the chosen model
	// cannot do (tools on a model without tool use); the message names the model.
	ErrUnsupported = errors.New("unsupported")
)

// Reasons refine a Kind where a surface tells causes apart; OpenAI's API answers them as
// its error "code" (docs/PROTOCOL.md 10.5).
const (
	// ReasonInvalidValue: a malformed body or a bad value.
	ReasonInvalidValue = "invalid_value"
	// ReasonUnsupportedParameter: a parameter the gateway cannot honour (n above 1, tools
	// on a model without tool use).
	ReasonUnsupportedParameter = "unsupported_parameter"
	// ReasonUnsupportedValue: a value the gateway cannot honour (a remote image URL, a tool
	// type other than function).
	ReasonUnsupportedValue = "unsupported_value"
	// ReasonContextLength: the upstream refused an input longer than the model takes.
	ReasonContextLength = "context_length_exceeded"
	// ReasonModelNotFound: a model that does not exist, one the gateway does not list or
	// one the upstream does not know.
	ReasonModelNotFound = "model_not_found"
)

// RequestError is a request refused because of one field. Every refusal of a client's
// request, by a surface's decoder, by the translator or by the core, is one, built by
// Refuse, so each surface can name the field in its own error shape. Classify answers it
// as KindInvalid.
type RequestError struct {
	// Err is the sentinel: ErrInvalidBody, ErrInvalidRequest or ErrUnsupported.
	Err error
	// Param is the field's JSON path in the REST body's notation
	// ("messages[1].tool_calls[0].function.arguments"); empty when no one field is to blame.
	Param string
	// Reason is one of the Reason constants.
	Reason string
	// Msg is the text after the sentinel.
	Msg string
}

func (e *RequestError) Error() string { return e.Err.Error() + ": " + e.Msg }
func (e *RequestError) Unwrap() error { return e.Err }

// Refuse is the one way to refuse a request: a RequestError wrapping sentinel, with reason
// and the message. The field is the path the message starts with ("messages[2].role" of
// "messages[2].role is missing"): every refusal names its field first, so the path is
// written once, in the message. A refusal whose wording is fixed otherwise names its
// field with At.
func Refuse(sentinel error, reason, format string, args ...any) *RequestError {
	msg := fmt.Sprintf(format, args...)
	return &RequestError{Err: sentinel, Param: leadingPath(msg), Reason: reason, Msg: msg}
}

// At names the field e is about when its message does not start with it: "tools" for a
// model without tool use, a query parameter, "" for a body that is not JSON at all.
func (e *RequestError) At(param string) *RequestError {
	e.Param = param
	return e
}

// leadingPath is the field path a refusal's message starts with: "messages[2].role" of
// "messages[2].role is missing", "max_tokens" of "max_tokens must be at least 1", "" when
// the message starts with no path.
func leadingPath(msg string) string {
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

// JSONErrorText words a JSON syntax error of json/v2 as the end of a refusal about a field
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
