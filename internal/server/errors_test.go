package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/jsonapi"
	"github.com/nirmata/llm-gateway/internal/translate"
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
		{"malformed JSON", fmt.Errorf("%w: body is not valid JSON", jsonapi.ErrInvalidJSON), 400, codes.InvalidArgument, false, "body is not valid JSON"},
		{"invalid request", fmt.Errorf("%w: messages[3].role", translate.ErrInvalidRequest), 400, codes.InvalidArgument, false, "messages[3].role"},
		{"unsupported", fmt.Errorf("%w: model x has no tool use", translate.ErrUnsupported), 400, codes.InvalidArgument, false, "no tool use"},
		{"missing key", errUnauthenticated, 401, codes.Unauthenticated, false, "API key"},
		{"body too large", errBodyTooLarge, 413, codes.ResourceExhausted, false, "too large"},
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
		{"body read timeout", errBodyTimeout, 408, codes.DeadlineExceeded, false, "did not arrive in time"},
		{"internal server", apiErr(bedrock.CodeInternalServer), 502, codes.Unavailable, false, "upstream says"},
		{"model error", apiErr(bedrock.CodeModelError), 502, codes.Unavailable, false, "upstream says"},
		{"model stream error", apiErr(bedrock.CodeModelStreamError), 502, codes.Unavailable, false, "upstream says"},
		{"200 without output", fmt.Errorf("%w: no output", translate.ErrUpstream), 502, codes.Unavailable, false, "no output"},
		{"unreachable upstream", fmt.Errorf("%w: dial tcp: connection refused", bedrock.ErrTransport), 502, codes.Unavailable, false, "upstream model service failed"},
		{"bug", errors.New("nil pointer somewhere secret"), 500, codes.Internal, false, "internal error"},
		{"gRPC status from a lower layer", status.Error(codes.Unimplemented, "not yet"), 501, codes.Unimplemented, false, "not yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := classify(tt.err)
			assert.Equal(t, tt.httpStatus, c.httpStatus)
			assert.Equal(t, tt.code, c.code)
			assert.Equal(t, tt.retryAfter, c.retryAfter)
			assert.Contains(t, c.message, tt.message)
			assert.Equal(t, tt.code, status.Code(grpcError(t.Context(), zap.NewNop(), tt.err)))
		})
	}
	assert.NotContains(t, classify(errors.New("secret detail")).message, "secret", "internal details stay in the log")
}

// TestClassifyHidesTheGatewaysAWSIdentity: Bedrock's refusal of the gateway's credentials
// names its role ARN and account; the client sees neither, the log has both.
func TestClassifyHidesTheGatewaysAWSIdentity(t *testing.T) {
	t.Parallel()
	const text = "User: arn:aws:sts::123456789012:assumed-role/gateway-role/i-0abc is not authorized to perform: bedrock:InvokeModel"
	for _, code := range []string{bedrock.CodeAccessDenied, bedrock.CodeUnrecognizedClient, bedrock.CodeInvalidSignature, bedrock.CodeExpiredToken} {
		err := &bedrock.APIError{Code: code, Message: text, StatusCode: bedrock.StatusCode(code)}
		core, logs := observer.New(zap.DebugLevel)
		c := answer(withRequestID(t.Context(), "rid-1"), zap.New(core), err)
		assert.NotContains(t, c.message, "123456789012", code)
		assert.NotContains(t, c.message, "arn:aws", code)
		require.Equal(t, 1, logs.Len(), code)
		assert.Contains(t, fmt.Sprint(logs.All()[0].ContextMap()), "123456789012", "the log keeps the cause")
	}
}

// TestClassifyBoundsMessages: a message that quotes input (Bedrock's can) reaches the
// client cut to clip.MessageMax, without control characters.
func TestClassifyBoundsMessages(t *testing.T) {
	t.Parallel()
	huge := &bedrock.APIError{Code: bedrock.CodeValidation, Message: "Value '" + strings.Repeat("9\n", 1<<20) + "' is invalid", StatusCode: 400}
	c := classify(huge)
	assert.LessOrEqual(t, len(c.message), clip.MessageMax+len("…"))
	body := jsonapi.AppendError(nil, c.message, codeName(c.code), "0123456789abcdef")
	assert.Less(t, len(body), 4<<10)
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
		assert.Equal(t, want, codeName(c))
	}
	assert.Equal(t, http.StatusTooManyRequests, httpStatusOf(codes.ResourceExhausted))
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	betaDigest := sha256.Sum256([]byte("beta-key"))
	k, err := NewKeyring([]string{"alpha", "sha256:" + hex.EncodeToString(betaDigest[:])})
	require.NoError(t, err)
	assert.True(t, k.enabled())
	for auth, want := range map[string]bool{
		"NIRMATA-API alpha":     true,
		"Bearer beta-key":       true,
		"bearer  beta-key ":     true,
		"nirmata-api alpha":     true,
		"NIRMATA-API alph":      false,
		"NIRMATA-API alphaX":    false,
		"Basic alpha":           false,
		"alpha":                 false,
		"":                      false,
		"Bearer ":               false,
		"NIRMATA-API gamma":     false,
		"Bearer alpha,beta-key": false,
		"Bearer sha256:" + hex.EncodeToString(betaDigest[:]): false, // the digest is not the key
	} {
		id, ok := k.check(auth)
		assert.Equal(t, want, ok, "%q", auth)
		if ok {
			assert.Len(t, id, 8)
			assert.NotContains(t, auth, id, "the identity is not the key")
		}
	}
	id1, _ := k.check("Bearer alpha")
	id2, _ := k.check("Bearer beta-key")
	assert.NotEqual(t, id1, id2)
	assert.Equal(t, hex.EncodeToString(betaDigest[:4]), id2)

	off, err := NewKeyring(nil)
	require.NoError(t, err)
	assert.False(t, off.enabled())
	_, err = NewKeyring([]string{"sha256:xyz"})
	assert.ErrorContains(t, err, "64 hex digits")
}
