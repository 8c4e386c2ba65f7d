package translate

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// invalidf refuses an invalid value, with a message that starts with the field's path.
func invalidf(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, format, args...)
}

// unsupportedf refuses a value the gateway cannot honour, with a message that starts with
// the field's path.
func unsupportedf(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue, format, args...)
}

// upstreamf wraps fault.ErrUpstream with a message a person can act on.
func upstreamf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{fault.ErrUpstream}, args...)...)
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
