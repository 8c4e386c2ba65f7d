package bedrock

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/nirmata/llm-gateway/internal/fault"
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
// answered with. The client is told the upstream failed; the detail is the log's.
var ErrTransport error = &clientError{msg: "bedrock transport error",
	failure: fault.Failure{Kind: fault.KindUpstream, Message: "the upstream model service failed", Logged: true}}

// ErrCredentials marks a call that could not be signed because the gateway's own AWS
// credentials (or Bedrock API key) could not be had: Bedrock was not called. It is also an
// ErrTransport, and answered as the gateway having no credentials (docs/PROTOCOL.md 14.7).
var ErrCredentials error = &clientError{msg: "bedrock transport error: no usable AWS credentials", wrapped: ErrTransport,
	failure: fault.Failure{Kind: fault.KindNoCredentials, Message: noCredentials, Logged: true}}

// clientError is a failure of the client itself, not an answer of Bedrock's, with how it
// is answered (fault.Classified).
type clientError struct {
	msg     string
	wrapped error
	failure fault.Failure
}

func (e *clientError) Error() string { return e.msg }
func (e *clientError) Unwrap() error { return e.wrapped }

// Failure implements [fault.Classified].
func (e *clientError) Failure() fault.Failure { return e.failure }

// credentialsRefused stands in for Bedrock's text when Bedrock refuses the gateway's own
// AWS credentials (docs/PROTOCOL.md 14.7).
const credentialsRefused = "Bedrock refused the gateway's AWS credentials; the gateway log has the cause under this request id"

// noCredentials is what a client is told when the gateway has no AWS credentials (or
// Bedrock API key) to call Bedrock with (docs/PROTOCOL.md 14.7).
const noCredentials = "the gateway has no AWS credentials, so Bedrock was not called; the gateway log has the cause under this request id"

// codeAnswer is what one of Bedrock's error codes means: the HTTP status Bedrock answers
// it with, and how the gateway answers it.
type codeAnswer struct {
	status int
	kind   fault.Kind
	// retry: a retry may soon succeed, which the client is told (Retry-After).
	retry bool
	// failover: the target is busy or failing, not the request wrong, so failover moves
	// on to the alias's next target (docs/PROTOCOL.md 14.4).
	failover bool
}

// codeAnswers is the one reading of Bedrock's error codes (docs/PROTOCOL.md 5). A code not
// listed is answered by Bedrock with 500 and by the gateway as an upstream failure.
var codeAnswers = map[string]codeAnswer{
	CodeValidation:           {status: http.StatusBadRequest, kind: fault.KindInvalid},
	CodeResourceNotFound:     {status: http.StatusNotFound, kind: fault.KindNotFound},
	CodeThrottling:           {status: http.StatusTooManyRequests, kind: fault.KindRateLimited, retry: true, failover: true},
	CodeModelNotReady:        {status: http.StatusTooManyRequests, kind: fault.KindRateLimited, retry: true, failover: true},
	CodeServiceQuotaExceeded: {status: http.StatusBadRequest, kind: fault.KindRateLimited, retry: true, failover: true},
	CodeModelTimeout:         {status: http.StatusRequestTimeout, kind: fault.KindTimeout},
	CodeServiceUnavailable:   {status: http.StatusServiceUnavailable, kind: fault.KindUnavailable, retry: true, failover: true},
	CodeInternalServer:       {status: http.StatusInternalServerError, kind: fault.KindUpstream, failover: true},
	CodeModelError:           {status: http.StatusFailedDependency, kind: fault.KindUpstream},
	CodeModelStreamError:     {status: http.StatusFailedDependency, kind: fault.KindUpstream},
	// The gateway's own AWS identity refused: the client cannot fix that, and Bedrock's
	// text can name the gateway's IAM role and account, so it goes to the log only
	// (docs/PROTOCOL.md 14.7).
	CodeAccessDenied:               {status: http.StatusForbidden, kind: fault.KindCredentials},
	CodeUnrecognizedClient:         {status: http.StatusInternalServerError, kind: fault.KindCredentials},
	CodeInvalidSignature:           {status: http.StatusInternalServerError, kind: fault.KindCredentials},
	CodeExpiredToken:               {status: http.StatusInternalServerError, kind: fault.KindCredentials},
	CodeIncompleteSignature:        {status: http.StatusInternalServerError, kind: fault.KindCredentials},
	CodeMissingAuthenticationToken: {status: http.StatusInternalServerError, kind: fault.KindCredentials},
}

// answerOf is what code means; an unknown code is an upstream failure.
func answerOf(code string) codeAnswer {
	if a, ok := codeAnswers[code]; ok {
		return a
	}
	return codeAnswer{status: http.StatusInternalServerError, kind: fault.KindUpstream}
}

// StatusCode is the HTTP status Bedrock answers each error code with.
func StatusCode(code string) int { return answerOf(code).status }

// contextLengthTexts are what Bedrock's ValidationException says, model by model, when the
// input is longer than the model takes (docs/PROTOCOL.md 10.5).
var contextLengthTexts = []string{
	"input is too long", "input length and max_tokens exceed context limit",
	"too many total text bytes", "prompt is too long",
}

// modelIDTexts are what Bedrock's ValidationException says of a model id it cannot use as
// one: "The provided model identifier is invalid." (an id of no model Bedrock has), and the
// constraint error of a modelId that does not match its pattern. They are answered as an
// unknown model, as ResourceNotFoundException is (docs/PROTOCOL.md 5).
var modelIDTexts = []string{"model identifier is invalid", "at 'modelid' failed to satisfy constraint"}

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

// Failure is how the gateway answers e (fault.Classified): Bedrock's text, or its code
// when the text is empty, except for a refusal of the gateway's own credentials.
func (e *APIError) Failure() fault.Failure {
	a := answerOf(e.Code)
	if a.kind == fault.KindCredentials {
		return fault.Failure{Kind: fault.KindCredentials, Message: credentialsRefused, Logged: true}
	}
	f := fault.Failure{Kind: a.kind, Message: e.Message}
	if a.retry {
		f.RetryAfter = fault.RetrySoon
	}
	lower := strings.ToLower(e.Message)
	if a.kind == fault.KindInvalid && slices.ContainsFunc(modelIDTexts, func(t string) bool { return strings.Contains(lower, t) }) {
		f.Kind = fault.KindNotFound
	}
	switch f.Kind {
	case fault.KindInvalid:
		f.Reason = fault.ReasonInvalidValue
		for _, t := range contextLengthTexts {
			if strings.Contains(lower, t) {
				f.Reason = fault.ReasonContextLength
			}
		}
	case fault.KindNotFound:
		f.Reason = fault.ReasonModelNotFound
	}
	if f.Message == "" {
		f.Message = e.Code
	}
	return f
}

// Failover reports whether failover moves on to the next target after e: the target is
// busy or failing, not the request wrong (docs/PROTOCOL.md 14.4).
func (e *APIError) Failover() bool { return answerOf(e.Code).failover }

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
