package fault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"

	"github.com/nirmata/llm-gateway/internal/clip"
)

// TestRefuseNamesTheLeadingField: a refusal's field is the path its message starts with,
// or the one At names when the wording starts otherwise.
func TestRefuseNamesTheLeadingField(t *testing.T) {
	t.Parallel()
	for msg, param := range map[string]string{
		"messages[2].role is missing":                               "messages[2].role",
		"messages[0].content[1].image_url: 6 MiB, at most 3.75 MiB": "messages[0].content[1].image_url",
		"max_tokens must be at least 1":                             "max_tokens",
		"tools[0].function.parameters.":                             "tools[0].function.parameters",
		"tool_choice.type \"custom\" is not supported":              "tool_choice.type",
		"(a note) before any path":                                  "",
		"model \"x\" does not support tool use":                     "model",
	} {
		e := Refuse(ErrInvalidRequest, ReasonInvalidValue, "%s", msg)
		assert.Equal(t, param, e.Param, msg)
		assert.Equal(t, "invalid request: "+msg, e.Error())
		assert.ErrorIs(t, e, ErrInvalidRequest)
	}
	e := Refuse(ErrUnsupported, ReasonUnsupportedParameter, "model %s does not support tool use", "x").At("tools")
	assert.Equal(t, "tools", e.Param)
	assert.Equal(t, "unsupported: model x does not support tool use", e.Error())
	assert.Equal(t, "", Refuse(ErrInvalidBody, ReasonInvalidValue, "body is empty").At("").Param)
}

// TestJSONErrorText words json/v2's syntax errors as the end of a refusal.
func TestJSONErrorText(t *testing.T) {
	t.Parallel()
	v := jsontext.Value(`{"a":`)
	assert.Equal(t, "is not valid JSON: unexpected end of input at byte 5", JSONErrorText(v.Compact()))
	v = jsontext.Value(strings.Repeat("[", 10001) + strings.Repeat("]", 10001))
	err := v.Compact()
	assert.True(t, strings.HasPrefix(JSONErrorText(err), "nests deeper than 10000 levels at byte "), JSONErrorText(err))
	assert.Equal(t, "is not valid JSON: boom", JSONErrorText(errors.New("boom")))
}

// classified is an error that says how it is answered, as the upstream client's are.
type classified struct{ f Failure }

func (c classified) Error() string    { return "classified" }
func (c classified) Failure() Failure { return c.f }

// TestClassify walks the gateway's own part of the error table of docs/PROTOCOL.md 5;
// the upstream's part is internal/bedrock's, each surface's statuses its own.
func TestClassify(t *testing.T) {
	t.Parallel()
	refused := Refuse(ErrInvalidRequest, ReasonUnsupportedValue, "messages[0].content[1].image_url.url: remote images are not supported")
	throttled := Failure{Kind: KindRateLimited, Message: "upstream says slow down", RetryAfter: RetrySoon}
	tests := []struct {
		name string
		err  error
		want Failure
	}{
		{"refused field", refused, Failure{Kind: KindInvalid, Message: refused.Error(),
			Param: "messages[0].content[1].image_url.url", Reason: ReasonUnsupportedValue}},
		{"body not JSON", Refuse(ErrInvalidBody, ReasonInvalidValue, "body is not valid JSON: unexpected end of input at byte 3").At(""),
			Failure{Kind: KindInvalid, Message: "invalid request body: body is not valid JSON: unexpected end of input at byte 3", Reason: ReasonInvalidValue}},
		{"missing key", ErrUnauthenticated, Failure{Kind: KindUnauthenticated, Message: ErrUnauthenticated.Error()}},
		{"body too large", ErrBodyTooLarge, Failure{Kind: KindTooLarge, Message: "request body too large"}},
		{"body read timeout", ErrBodyTimeout, Failure{Kind: KindBodyTimeout, Message: "the request body did not arrive in time"}},
		{"gateway deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), Failure{Kind: KindTimeout, Message: "the upstream model did not answer in time"}},
		{"client gone", fmt.Errorf("call: %w", context.Canceled), Failure{Kind: KindCanceled, Message: "request canceled"}},
		{"overloaded", ErrOverloaded, Failure{Kind: KindUnavailable, Message: ErrOverloaded.Error(), RetryAfter: time.Second}},
		{"draining", ErrDraining, Failure{Kind: KindUnavailable, Message: ErrDraining.Error(), RetryAfter: time.Second}},
		// A stream the drain cut: its upstream read failed with the drain's cause, which
		// the reader wrapped. The client reads the sentinel's text alone.
		{"stream cut by the drain", fmt.Errorf("%w: decode event: %w", classified{throttled}, ErrDraining),
			Failure{Kind: KindUnavailable, Message: ErrDraining.Error(), RetryAfter: time.Second}},
		{"no route", &RouteError{Message: "no route for GET /x"}, Failure{Kind: KindNotFound, Message: "no route for GET /x"}},
		{"wrong method", &RouteError{Message: "method PUT is not allowed on /x", WrongMethod: true},
			Failure{Kind: KindWrongMethod, Message: "method PUT is not allowed on /x"}},
		{"request line too long", &HeadError{Message: "request URI too long", InURI: true}, Failure{Kind: KindURITooLong, Message: "request URI too long"}},
		{"headers too large", &HeadError{Message: "request headers too large"}, Failure{Kind: KindHeadersTooLarge, Message: "request headers too large"}},
		{"malformed head", &HeadError{Message: "malformed request: x", Malformed: true}, Failure{Kind: KindInvalid, Message: "malformed request: x", Reason: ReasonInvalidValue}},
		{"unusable answer", fmt.Errorf("%w: no output", ErrUpstream), Failure{Kind: KindUpstream, Message: "upstream error: no output"}},
		{"classified", fmt.Errorf("call: %w", classified{throttled}), throttled},
		{"deadline over classified", fmt.Errorf("%w: %w", classified{throttled}, context.DeadlineExceeded),
			Failure{Kind: KindTimeout, Message: "the upstream model did not answer in time"}},
		{"bug", errors.New("nil pointer somewhere secret"), Failure{Kind: KindInternal, Message: "internal error", Logged: true}},
		{"bare sentinel", fmt.Errorf("%w: messages[0]", ErrInvalidRequest), Failure{Kind: KindInternal, Message: "internal error", Logged: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Classify(t.Context(), tt.err))
		})
	}

	// A call the drain cancelled is told the gateway is shutting down.
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(ErrDraining)
	assert.Equal(t, KindUnavailable, Classify(ctx, context.Canceled).Kind)
}

// TestClassifyBoundsMessages: a message that quotes input reaches the client cut to
// clip.MessageMax, without control characters.
func TestClassifyBoundsMessages(t *testing.T) {
	t.Parallel()
	huge := Refuse(ErrInvalidRequest, ReasonInvalidValue, "stop[0] %s is too long", strings.Repeat("9\n", 1<<20))
	f := Classify(t.Context(), huge)
	assert.LessOrEqual(t, len(f.Message), clip.MessageMax+len("…"))
	assert.NotContains(t, f.Message, "\n")
}

// TestKindCodes: every kind has its code, in gRPC's names in snake case.
func TestKindCodes(t *testing.T) {
	t.Parallel()
	for k := range Kind(Kinds) {
		assert.NotEmpty(t, k.Code(), "kind %d", k)
	}
	assert.Equal(t, "resource_exhausted", KindRateLimited.Code())
	assert.Equal(t, "invalid_argument", KindInvalid.Code())
}
