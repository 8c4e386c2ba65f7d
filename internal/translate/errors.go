package translate

import (
	"errors"
	"fmt"
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
