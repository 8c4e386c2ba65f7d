package bedrock

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
)

// Error codes Bedrock Runtime answers with, as they appear in the X-Amzn-ErrorType header,
// the body's __type, or (first letter lowered) an in-stream exception's :exception-type.
const (
	CodeValidation           = "ValidationException"
	CodeAccessDenied         = "AccessDeniedException"
	CodeResourceNotFound     = "ResourceNotFoundException"
	CodeThrottling           = "ThrottlingException"
	CodeServiceQuotaExceeded = "ServiceQuotaExceededException"
	CodeModelNotReady        = "ModelNotReadyException"
	CodeModelTimeout         = "ModelTimeoutException"
	CodeModelError           = "ModelErrorException"
	CodeModelStreamError     = "ModelStreamErrorException"
	CodeInternalServer       = "InternalServerException"
	CodeServiceUnavailable   = "ServiceUnavailableException"

	// Codes AWS answers when it refuses the caller's credentials or signature before
	// Bedrock looks at the request.
	CodeUnrecognizedClient         = "UnrecognizedClientException"
	CodeInvalidSignature           = "InvalidSignatureException"
	CodeExpiredToken               = "ExpiredTokenException"
	CodeIncompleteSignature        = "IncompleteSignatureException"
	CodeMissingAuthenticationToken = "MissingAuthenticationTokenException"
)

// ErrTransport marks failures to reach Bedrock or to read its answer (connection errors,
// credentials that cannot be had, cut or malformed frames), as opposed to errors Bedrock
// answered with.
var ErrTransport = errors.New("bedrock transport error")

// ErrCredentials marks a call that could not be signed because the gateway's own AWS
// credentials (or Bedrock API key) could not be had. It is also an ErrTransport.
var ErrCredentials = fmt.Errorf("%w: no usable AWS credentials", ErrTransport)

// StatusCode is the HTTP status Bedrock answers each error code with.
func StatusCode(code string) int {
	switch code {
	case CodeValidation, CodeServiceQuotaExceeded:
		return http.StatusBadRequest
	case CodeAccessDenied:
		return http.StatusForbidden
	case CodeResourceNotFound:
		return http.StatusNotFound
	case CodeModelTimeout:
		return http.StatusRequestTimeout
	case CodeModelError, CodeModelStreamError:
		return http.StatusFailedDependency
	case CodeThrottling, CodeModelNotReady:
		return http.StatusTooManyRequests
	case CodeServiceUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// APIError is an error answered by Bedrock, before or during a stream. It implements
// smithy.APIError, so it is classified by ErrorCode() like the SDK's own errors, and the
// HTTPStatusCode method the SDK's retryer consults.
type APIError struct {
	Code       string
	Message    string
	StatusCode int
	RequestID  string
}

var _ smithy.APIError = (*APIError)(nil)

// Error implements [error].
func (e *APIError) Error() string {
	return fmt.Sprintf("bedrock: %s: %s", e.Code, e.Message)
}

// ErrorCode implements [smithy.APIError].
func (e *APIError) ErrorCode() string { return e.Code }

// ErrorMessage implements [smithy.APIError].
func (e *APIError) ErrorMessage() string { return e.Message }

// ErrorFault implements [smithy.APIError].
func (e *APIError) ErrorFault() smithy.ErrorFault {
	if e.StatusCode >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// HTTPStatusCode is what aws-sdk-go-v2's retryer reads to retry 5xx answers.
func (e *APIError) HTTPStatusCode() int { return e.StatusCode }

// NormalizeCode turns an error type as Bedrock spells it in any place (header, __type with
// a namespace or a ":" suffix, camelCase :exception-type) into the PascalCase code.
func NormalizeCode(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
