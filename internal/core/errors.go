package core

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	"google.golang.org/grpc/codes"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Errors a transport or the core raises itself.
var (
	// ErrUnauthenticated: no valid key (docs/PROTOCOL.md 2).
	ErrUnauthenticated = errors.New("missing or invalid API key: send Authorization: NIRMATA-API <key> or Bearer <key>")
	// ErrBodyTooLarge: a REST body over max_body_bytes.
	ErrBodyTooLarge = errors.New("request body too large")
	// ErrBodyTimeout: a REST body that did not arrive within body_read_timeout.
	ErrBodyTimeout = errors.New("the request body did not arrive in time")
	// ErrOverloaded: max_concurrent Bedrock calls are in flight.
	ErrOverloaded = errors.New("the gateway is at its limit of concurrent upstream calls; retry shortly")
	// ErrDraining: the gateway is shutting down. It is also the cause with which calls
	// still running at the end of a drain are cancelled.
	ErrDraining = errors.New("the gateway is shutting down; retry on another instance")
	// ErrModelNotFound: a model name the gateway does not list.
	ErrModelNotFound = errors.New("model not found: GET /v1/models lists the models this gateway serves")
	// errCredentialsRefused stands in for Bedrock's text when Bedrock refuses the gateway's
	// own AWS credentials (docs/PROTOCOL.md 14.7).
	errCredentialsRefused = errors.New("Bedrock refused the gateway's AWS credentials; the gateway log has the cause under this request id")
)

// Kind is how a failure is answered. Each transport maps a Kind to its own status (HTTP,
// gRPC code, OpenAI error type); the mapping to HTTP statuses and gRPC codes of
// docs/PROTOCOL.md 5 is in each Kind's comment.
type Kind uint8

// Kinds.
const (
	// KindInternal: a bug. 500, Internal. The detail goes to the log only.
	KindInternal Kind = iota
	// KindInvalid: the request cannot be served as sent (malformed, a bad field, a
	// Bedrock ValidationException). 400, InvalidArgument.
	KindInvalid
	// KindUnauthenticated: 401, Unauthenticated.
	KindUnauthenticated
	// KindNotFound: an unknown model. 404, NotFound.
	KindNotFound
	// KindTooLarge: a body over the limit. 413, ResourceExhausted.
	KindTooLarge
	// KindBodyTimeout: a body that did not arrive in time. 408, DeadlineExceeded.
	KindBodyTimeout
	// KindRateLimited: Bedrock throttled or is not ready, or the caller's key is over one
	// of its limits. 429 with Retry-After, ResourceExhausted.
	KindRateLimited
	// KindTimeout: the model or the gateway's deadline. 504, DeadlineExceeded.
	KindTimeout
	// KindUnavailable: Bedrock unavailable, the gateway overloaded or draining. 503 with
	// Retry-After, Unavailable.
	KindUnavailable
	// KindUpstream: Bedrock failed or answered unusably. 502, Unavailable.
	KindUpstream
	// KindCredentials: Bedrock refused the gateway's own credentials. 502, Internal.
	KindCredentials
	// KindCanceled: the client went away. 499, Canceled.
	KindCanceled
	// KindWrongMethod: a REST path served for another method. 405, Unimplemented.
	KindWrongMethod
)

// statusOf is the one table of docs/PROTOCOL.md 5: each Kind's HTTP status (REST and
// OpenAI's API) and gRPC code (gRPC, and the snake-case "code" of REST error bodies).
var statusOf = [...]struct {
	http int
	code codes.Code
}{
	KindInternal:        {http.StatusInternalServerError, codes.Internal},
	KindInvalid:         {http.StatusBadRequest, codes.InvalidArgument},
	KindUnauthenticated: {http.StatusUnauthorized, codes.Unauthenticated},
	KindNotFound:        {http.StatusNotFound, codes.NotFound},
	KindTooLarge:        {http.StatusRequestEntityTooLarge, codes.ResourceExhausted},
	KindBodyTimeout:     {http.StatusRequestTimeout, codes.DeadlineExceeded},
	KindRateLimited:     {http.StatusTooManyRequests, codes.ResourceExhausted},
	KindTimeout:         {http.StatusGatewayTimeout, codes.DeadlineExceeded},
	KindUnavailable:     {http.StatusServiceUnavailable, codes.Unavailable},
	KindUpstream:        {http.StatusBadGateway, codes.Unavailable},
	KindCredentials:     {http.StatusBadGateway, codes.Internal},
	KindCanceled:        {499, codes.Canceled}, // nginx's "client closed request"
	KindWrongMethod:     {http.StatusMethodNotAllowed, codes.Unimplemented},
}

// HTTPStatus is the status a REST answer of this kind has.
func (k Kind) HTTPStatus() int { return statusOf[k].http }

// Code is the gRPC code of this kind.
func (k Kind) Code() codes.Code { return statusOf[k].code }

// CodeName is the snake-case name of k's gRPC code, as REST error bodies and stream error
// lines carry it ("resource_exhausted").
func (k Kind) CodeName() string { return CodeName(k.Code()) }

// CodeName is the snake-case name of a gRPC code ("resource_exhausted", "ok").
func CodeName(c codes.Code) string {
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

// Failure is how one error is answered.
type Failure struct {
	Kind Kind
	// Message is what the client reads: bounded, and generic for internal failures.
	Message string
	// RetryAfter is when a retry may succeed; zero when retrying will not help.
	RetryAfter time.Duration
	// Logged: the detail is the log's, not the client's (internal and credential failures).
	Logged bool
	// Param is the request field to blame, as a JSON path; empty when no one field is.
	Param string
	// Reason refines the Kind where a surface tells causes apart: a translate.Code
	// constant or ReasonContextLength for an invalid request, ReasonModelNotFound for a
	// model that does not exist; empty otherwise. OpenAI's API answers it as its error
	// code.
	Reason string
	// Limit names the key's limit a refusal is about (docs/PROTOCOL.md 14.2), which the
	// Nirmata body carries; empty otherwise.
	Limit string
}

// ReasonModelNotFound is a model that does not exist: one the gateway does not list, or
// one Bedrock does not know.
const ReasonModelNotFound = "model_not_found"

// ReasonContextLength is a Bedrock ValidationException saying the input is longer than the
// model takes.
const ReasonContextLength = "context_length_exceeded"

// contextLengthTexts are what Bedrock's ValidationException says, model by model, when the
// input is longer than the model takes (docs/PROTOCOL.md 10.5).
var contextLengthTexts = []string{
	"input is too long", "input length and max_tokens exceed context limit",
	"too many total text bytes", "prompt is too long",
}

// retryAfter is what a retryable failure tells the client to wait.
const retryAfter = time.Second

// Classify is the one place that decides how an error is answered. It checks in order:
// context errors, the gateway's own errors, then Bedrock's by error code string, never by
// Go type (the SDK's typed set changes between versions). The message is bounded: some
// quote input, and Bedrock's may too. ctx is the call's: a call the drain cancelled is
// told the gateway is shutting down, not that it was canceled.
func Classify(ctx context.Context, err error) Failure {
	if errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx), ErrDraining) {
		err = ErrDraining
	}
	f := classify(err)
	f.Message = clip.Message(f.Message)
	return f
}

func classify(err error) Failure {
	var route *RouteError
	var refused *fault.RequestError
	var limited *LimitError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Failure{Kind: KindTimeout, Message: "the upstream model did not answer in time"}
	case errors.Is(err, context.Canceled):
		return Failure{Kind: KindCanceled, Message: "request canceled"}
	case errors.Is(err, ErrUnauthenticated):
		return Failure{Kind: KindUnauthenticated, Message: err.Error()}
	case errors.Is(err, ErrOverloaded), errors.Is(err, ErrDraining):
		return Failure{Kind: KindUnavailable, Message: err.Error(), RetryAfter: retryAfter}
	case errors.As(err, &limited):
		return Failure{Kind: KindRateLimited, Message: err.Error(), RetryAfter: limited.RetryAfter, Limit: limited.Limit}
	case errors.Is(err, ErrModelNotFound):
		return Failure{Kind: KindNotFound, Message: err.Error(), Reason: ReasonModelNotFound}
	case errors.Is(err, ErrBodyTooLarge):
		return Failure{Kind: KindTooLarge, Message: err.Error()}
	case errors.Is(err, ErrBodyTimeout):
		return Failure{Kind: KindBodyTimeout, Message: err.Error()}
	case errors.As(err, &refused):
		return Failure{Kind: KindInvalid, Message: err.Error(), Param: refused.Param, Reason: refused.Reason}
	case errors.Is(err, fault.ErrInvalidRequest), errors.Is(err, fault.ErrUnsupported), errors.As(err, new(*invalidBody)):
		return Failure{Kind: KindInvalid, Message: err.Error(), Reason: fault.ReasonInvalidValue}
	case errors.As(err, &route) && route.WrongMethod:
		return Failure{Kind: KindWrongMethod, Message: route.Message}
	case route != nil:
		return Failure{Kind: KindNotFound, Message: route.Message}
	case errors.Is(err, fault.ErrUpstream):
		return Failure{Kind: KindUpstream, Message: err.Error()}
	case errors.Is(err, bedrock.ErrCredentials):
		return Failure{Kind: KindCredentials, Message: errCredentialsRefused.Error(), Logged: true}
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		f := classifyBedrock(apiErr.ErrorCode(), apiErr.ErrorMessage())
		var b *blamedError
		if errors.As(err, &b) && f.Kind == KindInvalid {
			f.Param = b.param
		}
		return f
	}
	if errors.Is(err, bedrock.ErrTransport) {
		return Failure{Kind: KindUpstream, Message: "the upstream model service failed", Logged: true}
	}
	return Failure{Kind: KindInternal, Message: "internal error", Logged: true}
}

func classifyBedrock(code, message string) Failure {
	f := Failure{Message: message}
	switch code {
	case bedrock.CodeValidation:
		f.Kind, f.Reason = KindInvalid, fault.ReasonInvalidValue
		lower := strings.ToLower(message)
		for _, t := range contextLengthTexts {
			if strings.Contains(lower, t) {
				f.Reason = ReasonContextLength
			}
		}
	case bedrock.CodeResourceNotFound:
		f.Kind, f.Reason = KindNotFound, ReasonModelNotFound
	case bedrock.CodeThrottling, bedrock.CodeModelNotReady, bedrock.CodeServiceQuotaExceeded:
		f.Kind, f.RetryAfter = KindRateLimited, retryAfter
	case bedrock.CodeModelTimeout:
		f.Kind = KindTimeout
	case bedrock.CodeServiceUnavailable:
		f.Kind, f.RetryAfter = KindUnavailable, retryAfter
	case bedrock.CodeAccessDenied, bedrock.CodeUnrecognizedClient, bedrock.CodeInvalidSignature,
		bedrock.CodeExpiredToken, bedrock.CodeIncompleteSignature, bedrock.CodeMissingAuthenticationToken:
		// The gateway's own AWS identity was refused: the client cannot fix that, and
		// Bedrock's text can name the gateway's IAM role and account, so it goes to the
		// log only (docs/PROTOCOL.md 14.7).
		return Failure{Kind: KindCredentials, Message: errCredentialsRefused.Error(), Logged: true}
	default: // InternalServer, ModelError, ModelStreamError, and codes not known yet
		f.Kind = KindUpstream
	}
	if f.Message == "" {
		f.Message = code
	}
	return f
}

// blamedError is a Bedrock refusal the translation traced to one field of the request
// (translate.RefusedParam), so the client's error names it.
type blamedError struct {
	err   error
	param string
}

func (e *blamedError) Error() string { return e.err.Error() }
func (e *blamedError) Unwrap() error { return e.err }

// blame marks a Bedrock ValidationException with the request field it is about, when the
// translation of the request can tell which (names is the request's).
func blame(names *translate.Names, err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == bedrock.CodeValidation {
		if param := translate.RefusedParam(names, apiErr.ErrorMessage()); param != "" {
			return &blamedError{err: err, param: param}
		}
	}
	return err
}

// RouteError is a REST request that no route serves.
type RouteError struct {
	Message string
	// WrongMethod: the path is served, for another method.
	WrongMethod bool
}

func (e *RouteError) Error() string { return e.Message }

// invalidBody marks a transport's decoding error as an invalid request: transports wrap
// theirs with InvalidBody.
type invalidBody struct{ err error }

func (e *invalidBody) Error() string { return e.err.Error() }
func (e *invalidBody) Unwrap() error { return e.err }

// InvalidBody marks err, a transport's error decoding a request, as the client's mistake.
func InvalidBody(err error) error { return &invalidBody{err} }
