package translate

import (
	"errors"
	"fmt"

	"github.com/nirmata/llm-gateway/internal/jsontext"
)

// Sentinels the server maps to statuses (docs/PROTOCOL.md section 5). Every error this package
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

// upstreamf wraps ErrUpstream with a message a person can act on.
func upstreamf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUpstream}, args...)...)
}

// notJSON words an error of jsontext.Compact as the end of a message about a field:
// "is not valid JSON: unexpected end of input at byte 12", or "nests deeper than 1000
// levels at byte 1000" for text that is JSON but nests too deeply.
func notJSON(err error) string {
	if _, tooDeep := err.(*jsontext.DepthError); tooDeep {
		return err.Error()
	}
	return "is not valid JSON: " + err.Error()
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
