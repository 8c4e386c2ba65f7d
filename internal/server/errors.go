package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/jsonapi"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Errors the service itself raises.
var (
	errUnauthenticated = errors.New("missing or invalid API key: send Authorization: NIRMATA-API <key> or Bearer <key>")
	errBodyTooLarge    = errors.New("request body too large")
	errBodyTimeout     = errors.New("the request body did not arrive in time")
	// errCredentialsRefused stands in for Bedrock's text when Bedrock refuses the gateway's
	// own AWS credentials.
	errCredentialsRefused = errors.New("Bedrock refused the gateway's AWS credentials; the gateway log has the cause under this request id")
)

// errClass is how one failure is answered: the gRPC code, the HTTP status, and the message
// a client sees. Internal failures get a generic message; their detail goes to the log.
type errClass struct {
	code       codes.Code
	httpStatus int
	message    string
	retryAfter bool
	internal   bool
}

// classify is the one place that decides how an error is answered (docs/PROTOCOL.md section 5).
// Its message is bounded: some quote input, and Bedrock's may too.
func classify(err error) errClass {
	c := classifyErr(err)
	c.message = clip.Message(c.message)
	return c
}

// classifyErr checks in order: context errors, the gateway's own errors, then Bedrock's by
// error code string, never by Go type (the SDK's typed set changes between versions).
func classifyErr(err error) errClass {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errClass{code: codes.DeadlineExceeded, httpStatus: http.StatusGatewayTimeout, message: "the upstream model did not answer in time"}
	case errors.Is(err, context.Canceled):
		return errClass{code: codes.Canceled, httpStatus: 499, message: "request canceled"}
	case errors.Is(err, errUnauthenticated):
		return errClass{code: codes.Unauthenticated, httpStatus: http.StatusUnauthorized, message: err.Error()}
	case errors.Is(err, errOverloaded), errors.Is(err, ErrDraining):
		return errClass{code: codes.Unavailable, httpStatus: http.StatusServiceUnavailable, message: err.Error(), retryAfter: true}
	case errors.Is(err, errBodyTimeout):
		return errClass{code: codes.DeadlineExceeded, httpStatus: http.StatusRequestTimeout, message: err.Error()}
	case errors.Is(err, errBodyTooLarge):
		return errClass{code: codes.ResourceExhausted, httpStatus: http.StatusRequestEntityTooLarge, message: err.Error()}
	case errors.Is(err, translate.ErrInvalidRequest), errors.Is(err, translate.ErrUnsupported), errors.Is(err, jsonapi.ErrInvalidJSON):
		return errClass{code: codes.InvalidArgument, httpStatus: http.StatusBadRequest, message: err.Error()}
	case errors.Is(err, translate.ErrUpstream):
		return errClass{code: codes.Unavailable, httpStatus: http.StatusBadGateway, message: err.Error()}
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		// A gRPC status raised by the gateway's own layers (grpc-gateway routing, auth).
		return errClass{code: s.Code(), httpStatus: httpStatusOf(s.Code()), message: s.Message()}
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return classifyBedrock(apiErr.ErrorCode(), apiErr.ErrorMessage())
	}
	if errors.Is(err, bedrock.ErrCredentials) {
		return errClass{code: codes.Internal, httpStatus: http.StatusBadGateway, message: errCredentialsRefused.Error(), internal: true}
	}
	if errors.Is(err, bedrock.ErrTransport) {
		return errClass{code: codes.Unavailable, httpStatus: http.StatusBadGateway, message: "the upstream model service failed", internal: true}
	}
	return errClass{code: codes.Internal, httpStatus: http.StatusInternalServerError, message: "internal error", internal: true}
}

func classifyBedrock(code, message string) errClass {
	c := errClass{message: message}
	switch code {
	case bedrock.CodeValidation:
		c.code, c.httpStatus = codes.InvalidArgument, http.StatusBadRequest
	case bedrock.CodeResourceNotFound:
		c.code, c.httpStatus = codes.NotFound, http.StatusNotFound
	case bedrock.CodeThrottling, bedrock.CodeModelNotReady, bedrock.CodeServiceQuotaExceeded:
		c.code, c.httpStatus, c.retryAfter = codes.ResourceExhausted, http.StatusTooManyRequests, true
	case bedrock.CodeModelTimeout:
		c.code, c.httpStatus = codes.DeadlineExceeded, http.StatusGatewayTimeout
	case bedrock.CodeServiceUnavailable:
		c.code, c.httpStatus, c.retryAfter = codes.Unavailable, http.StatusServiceUnavailable, true
	case bedrock.CodeAccessDenied, bedrock.CodeUnrecognizedClient, bedrock.CodeInvalidSignature,
		bedrock.CodeExpiredToken, bedrock.CodeIncompleteSignature, bedrock.CodeMissingAuthenticationToken:
		// The gateway's own AWS identity was refused: the client cannot fix that, and
		// Bedrock's text can name the gateway's IAM role and account, so it goes to the
		// log only (docs/PROTOCOL.md 14.7).
		c.code, c.httpStatus, c.internal = codes.Internal, http.StatusBadGateway, true
		c.message = errCredentialsRefused.Error()
	default: // InternalServer, ModelError, ModelStreamError, and codes not known yet
		c.code, c.httpStatus = codes.Unavailable, http.StatusBadGateway
	}
	if c.message == "" {
		c.message = code
	}
	return c
}

// httpStatusOf maps gRPC codes the gateway raises itself; Bedrock failures never come here.
func httpStatusOf(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Canceled:
		return 499
	default:
		return http.StatusInternalServerError
	}
}

// codeName is the snake-case name of a gRPC code, as error bodies and stream error events
// carry it ("resource_exhausted").
func codeName(c codes.Code) string {
	s := c.String() // "ResourceExhausted", "OK"
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z' { // a word starts: "OK" is one word
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// answer classifies err for a client and logs the detail of internal failures, which the
// client never sees.
func answer(ctx context.Context, log *zap.Logger, err error) errClass {
	if errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx), ErrDraining) {
		err = ErrDraining // cancelled at the end of a drain, not by the client
	}
	c := classify(err)
	callInfoFrom(ctx).code = codeName(c.code)
	if c.internal {
		log.Error("request failed", zap.String("request_id", requestID(ctx)), zap.Error(err))
	}
	return c
}

// grpcError turns any error into the status a gRPC client gets.
func grpcError(ctx context.Context, log *zap.Logger, err error) error {
	c := answer(ctx, log, err)
	return status.Error(c.code, c.message)
}
