package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// TestClassify walks the error table of docs/PROTOCOL.md section 5.
func TestClassify(t *testing.T) {
	t.Parallel()
	apiErr := func(code string) error {
		return fmt.Errorf("call: %w", &bedrock.APIError{Code: code, Message: "upstream says " + code, StatusCode: bedrock.StatusCode(code)})
	}
	tests := []struct {
		name       string
		err        error
		httpStatus int
		code       codes.Code
		retryAfter bool
		message    string
	}{
		{"malformed JSON", InvalidBody(errors.New("invalid request body: body is not valid JSON")), 400, codes.InvalidArgument, false, "body is not valid JSON"},
		{"invalid request", fmt.Errorf("%w: messages[3].role", fault.ErrInvalidRequest), 400, codes.InvalidArgument, false, "messages[3].role"},
		{"unsupported", fmt.Errorf("%w: model x has no tool use", fault.ErrUnsupported), 400, codes.InvalidArgument, false, "no tool use"},
		{"missing key", ErrUnauthenticated, 401, codes.Unauthenticated, false, "API key"},
		{"body too large", ErrBodyTooLarge, 413, codes.ResourceExhausted, false, "too large"},
		{"Bedrock validation", apiErr(bedrock.CodeValidation), 400, codes.InvalidArgument, false, "upstream says ValidationException"},
		{"unknown model", apiErr(bedrock.CodeResourceNotFound), 404, codes.NotFound, false, "upstream says"},
		{"throttling", apiErr(bedrock.CodeThrottling), 429, codes.ResourceExhausted, true, "upstream says"},
		{"model not ready", apiErr(bedrock.CodeModelNotReady), 429, codes.ResourceExhausted, true, "upstream says"},
		{"quota", apiErr(bedrock.CodeServiceQuotaExceeded), 429, codes.ResourceExhausted, true, "upstream says"},
		{"model timeout", apiErr(bedrock.CodeModelTimeout), 504, codes.DeadlineExceeded, false, "upstream says"},
		{"gateway deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), 504, codes.DeadlineExceeded, false, "did not answer in time"},
		{"service unavailable", apiErr(bedrock.CodeServiceUnavailable), 503, codes.Unavailable, true, "upstream says"},
		{"access denied", apiErr(bedrock.CodeAccessDenied), 502, codes.Internal, false, "refused the gateway's AWS credentials"},
		{"unrecognized client", apiErr(bedrock.CodeUnrecognizedClient), 502, codes.Internal, false, "refused the gateway's AWS credentials"},
		{"invalid signature", apiErr(bedrock.CodeInvalidSignature), 502, codes.Internal, false, "refused the gateway's AWS credentials"},
		{"expired token", apiErr(bedrock.CodeExpiredToken), 502, codes.Internal, false, "refused the gateway's AWS credentials"},
		{"no credentials", fmt.Errorf("%w: AWS credentials: no EC2 IMDS role found", bedrock.ErrCredentials), 502, codes.Internal, false, "refused the gateway's AWS credentials"},
		{"body read timeout", ErrBodyTimeout, 408, codes.DeadlineExceeded, false, "did not arrive in time"},
		{"internal server", apiErr(bedrock.CodeInternalServer), 502, codes.Unavailable, false, "upstream says"},
		{"model error", apiErr(bedrock.CodeModelError), 502, codes.Unavailable, false, "upstream says"},
		{"model stream error", apiErr(bedrock.CodeModelStreamError), 502, codes.Unavailable, false, "upstream says"},
		{"200 without output", fmt.Errorf("%w: no output", fault.ErrUpstream), 502, codes.Unavailable, false, "no output"},
		{"unreachable upstream", fmt.Errorf("%w: dial tcp: connection refused", bedrock.ErrTransport), 502, codes.Unavailable, false, "upstream model service failed"},
		{"bug", errors.New("nil pointer somewhere secret"), 500, codes.Internal, false, "internal error"},
		{"overloaded", ErrOverloaded, 503, codes.Unavailable, true, "concurrent"},
		{"draining", ErrDraining, 503, codes.Unavailable, true, "shutting down"},
		{"no route", &RouteError{Message: "no route for GET /x"}, 404, codes.NotFound, false, "no route"},
		{"wrong method", &RouteError{Message: "method PUT is not allowed", WrongMethod: true}, 405, codes.Unimplemented, false, "not allowed"},
		{"client gone", fmt.Errorf("call: %w", context.Canceled), 499, codes.Canceled, false, "canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := Classify(t.Context(), tt.err)
			assert.Equal(t, tt.httpStatus, f.Kind.HTTPStatus())
			assert.Equal(t, tt.code, f.Kind.Code())
			assert.Equal(t, tt.retryAfter, f.RetryAfter > 0)
			assert.Contains(t, f.Message, tt.message)
		})
	}
	assert.NotContains(t, Classify(t.Context(), errors.New("secret detail")).Message, "secret", "internal details stay in the log")

	// A call the drain cancelled is told the gateway is shutting down.
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(ErrDraining)
	assert.Equal(t, KindUnavailable, Classify(ctx, context.Canceled).Kind)
}

// TestClassifyHidesTheGatewaysAWSIdentity: Bedrock's refusal of the gateway's credentials
// names its role ARN and account; the client sees neither, the log has both.
func TestClassifyHidesTheGatewaysAWSIdentity(t *testing.T) {
	t.Parallel()
	const text = "User: arn:aws:sts::123456789012:assumed-role/gateway-role/i-0abc is not authorized to perform: bedrock:InvokeModel"
	for _, code := range []string{bedrock.CodeAccessDenied, bedrock.CodeUnrecognizedClient, bedrock.CodeInvalidSignature, bedrock.CodeExpiredToken} {
		err := &bedrock.APIError{Code: code, Message: text, StatusCode: bedrock.StatusCode(code)}
		f := Classify(t.Context(), err)
		assert.NotContains(t, f.Message, "123456789012", code)
		assert.NotContains(t, f.Message, "arn:aws", code)
		assert.True(t, f.Logged, "the transport logs the cause: %s", code)
	}
}

// TestClassifyBoundsMessages: a message that quotes input (Bedrock's can) reaches the
// client cut to clip.MessageMax, without control characters.
func TestClassifyBoundsMessages(t *testing.T) {
	t.Parallel()
	huge := &bedrock.APIError{Code: bedrock.CodeValidation, Message: "Value '" + strings.Repeat("9\n", 1<<20) + "' is invalid", StatusCode: 400}
	f := Classify(t.Context(), huge)
	assert.LessOrEqual(t, len(f.Message), clip.MessageMax+len("…"))
}

func TestCodeName(t *testing.T) {
	t.Parallel()
	for c, want := range map[codes.Code]string{
		codes.ResourceExhausted:  "resource_exhausted",
		codes.InvalidArgument:    "invalid_argument",
		codes.Unavailable:        "unavailable",
		codes.DeadlineExceeded:   "deadline_exceeded",
		codes.NotFound:           "not_found",
		codes.Internal:           "internal",
		codes.Unauthenticated:    "unauthenticated",
		codes.OK:                 "ok", // the gRPC access log's code of a call that succeeded
		codes.FailedPrecondition: "failed_precondition",
	} {
		assert.Equal(t, want, CodeName(c))
	}
}
