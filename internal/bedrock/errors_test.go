package bedrock

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/fault"
)

// TestFailures walks Bedrock's part of the error table of docs/PROTOCOL.md 5: how each
// exception code is answered, and whether failover moves on after it (14.4).
func TestFailures(t *testing.T) {
	t.Parallel()
	const credentials = "Bedrock refused the gateway's AWS credentials; the gateway log has the cause under this request id"
	upstream := func(code string) fault.Failure {
		return fault.Failure{Kind: fault.KindUpstream, Message: "upstream says " + code}
	}
	tests := []struct {
		code     string
		want     fault.Failure
		failover bool
	}{
		{CodeValidation, fault.Failure{Kind: fault.KindInvalid, Message: "upstream says " + CodeValidation, Reason: fault.ReasonInvalidValue}, false},
		{CodeResourceNotFound, fault.Failure{Kind: fault.KindNotFound, Message: "upstream says " + CodeResourceNotFound, Reason: fault.ReasonModelNotFound}, false},
		{CodeThrottling, fault.Failure{Kind: fault.KindRateLimited, Message: "upstream says " + CodeThrottling, RetryAfter: time.Second}, true},
		{CodeModelNotReady, fault.Failure{Kind: fault.KindRateLimited, Message: "upstream says " + CodeModelNotReady, RetryAfter: time.Second}, true},
		{CodeServiceQuotaExceeded, fault.Failure{Kind: fault.KindRateLimited, Message: "upstream says " + CodeServiceQuotaExceeded, RetryAfter: time.Second}, true},
		{CodeModelTimeout, fault.Failure{Kind: fault.KindTimeout, Message: "upstream says " + CodeModelTimeout}, false},
		{CodeServiceUnavailable, fault.Failure{Kind: fault.KindUnavailable, Message: "upstream says " + CodeServiceUnavailable, RetryAfter: time.Second}, true},
		{CodeInternalServer, upstream(CodeInternalServer), true},
		{CodeModelError, upstream(CodeModelError), false},
		{CodeModelStreamError, upstream(CodeModelStreamError), false},
		{"SomethingNewException", upstream("SomethingNewException"), false},
		{CodeAccessDenied, fault.Failure{Kind: fault.KindCredentials, Message: credentials, Logged: true}, false},
		{CodeUnrecognizedClient, fault.Failure{Kind: fault.KindCredentials, Message: credentials, Logged: true}, false},
		{CodeInvalidSignature, fault.Failure{Kind: fault.KindCredentials, Message: credentials, Logged: true}, false},
		{CodeExpiredToken, fault.Failure{Kind: fault.KindCredentials, Message: credentials, Logged: true}, false},
		{CodeIncompleteSignature, fault.Failure{Kind: fault.KindCredentials, Message: credentials, Logged: true}, false},
		{CodeMissingAuthenticationToken, fault.Failure{Kind: fault.KindCredentials, Message: credentials, Logged: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			err := &APIError{Code: tt.code, Message: "upstream says " + tt.code, StatusCode: StatusCode(tt.code)}
			assert.Equal(t, tt.want, fault.Classify(t.Context(), fmt.Errorf("call: %w", err)))
			assert.Equal(t, tt.failover, err.Failover())
		})
	}
}

// TestFailureDetails: an empty text is replaced by the code; a ValidationException about
// the input's length says so, one about the model id is an unknown model; a refusal of the gateway's credentials hides Bedrock's text,
// which names its role ARN and account.
func TestFailureDetails(t *testing.T) {
	t.Parallel()
	assert.Equal(t, CodeThrottling, (&APIError{Code: CodeThrottling}).Failure().Message)
	for _, text := range []string{
		"Input is too long for requested model.",
		"prompt is too long: 212345 tokens > 200000 maximum",
		"input length and max_tokens exceed context limit: 190000 + 32000 > 204698",
	} {
		f := (&APIError{Code: CodeValidation, Message: text}).Failure()
		assert.Equal(t, fault.ReasonContextLength, f.Reason, text)
		assert.Equal(t, text, f.Message)
	}
	// A model id Bedrock cannot use is an unknown model, whichever way Bedrock says it.
	for _, text := range []string{
		"The provided model identifier is invalid.",
		"1 validation error detected: Value 'x y' at 'modelId' failed to satisfy constraint: Member must satisfy regular expression pattern: …",
	} {
		f := (&APIError{Code: CodeValidation, Message: text}).Failure()
		assert.Equal(t, fault.Failure{Kind: fault.KindNotFound, Message: text, Reason: fault.ReasonModelNotFound}, f, text)
	}
	const identity = "User: arn:aws:sts::123456789012:assumed-role/gateway-role/i-0abc is not authorized to perform: bedrock:InvokeModel"
	f := (&APIError{Code: CodeAccessDenied, Message: identity}).Failure()
	assert.NotContains(t, f.Message, "123456789012")
	assert.NotContains(t, f.Message, "arn:aws")
	assert.True(t, f.Logged, "the transport logs the cause")
}

// TestClientFailures: what the client returns is answered as the table says: an answer
// Bedrock gave by its code (over real HTTP), an upstream out of reach as an upstream
// failure, credentials that cannot be had as the gateway having none; none shows the
// detail, which is the log's.
func TestClientFailures(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"message":"Too many requests, please wait before trying again."}`)
	}), 1)
	_, err := c.Converse(t.Context(), "m", simpleRequest)
	assert.Equal(t, fault.Failure{Kind: fault.KindRateLimited, Message: "Too many requests, please wait before trying again.", RetryAfter: time.Second},
		fault.Classify(t.Context(), err))

	unreachable := fmt.Errorf("%w: dial tcp 10.0.0.1:443: connection refused", ErrTransport)
	assert.Equal(t, fault.Failure{Kind: fault.KindUpstream, Message: "the upstream model service failed", Logged: true},
		fault.Classify(t.Context(), unreachable))

	noCredentials := fmt.Errorf("%w: AWS credentials: %w", ErrCredentials, errors.New("no EC2 IMDS role found"))
	require.ErrorIs(t, noCredentials, ErrTransport)
	assert.Equal(t, "bedrock transport error: no usable AWS credentials: AWS credentials: no EC2 IMDS role found", noCredentials.Error())
	// No credentials: Bedrock was not called, so it did not refuse them either.
	assert.Equal(t, fault.Failure{Kind: fault.KindNoCredentials, Logged: true,
		Message: "the gateway has no AWS credentials, so Bedrock was not called; the gateway log has the cause under this request id"},
		fault.Classify(t.Context(), noCredentials))
}
