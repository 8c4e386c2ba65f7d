package fault

import (
	"context"
	"errors"
	"time"

	"github.com/nirmata/llm-gateway/internal/clip"
)

// Errors the gateway raises itself, about a call rather than one field of its request.
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
	// ErrUpstream: the upstream answered 200 but the answer is unusable (no output, a
	// malformed_model_output / malformed_tool_use stop, a tool input that is not a JSON
	// object, a stream cut short or out of order).
	ErrUpstream = errors.New("upstream error")
)

// RouteError is a REST request that no route serves.
type RouteError struct {
	Message string
	// WrongMethod: the path is served, for another method.
	WrongMethod bool
}

func (e *RouteError) Error() string { return e.Message }

// HeadError is a REST request net/http refused while reading its request line and headers,
// before any handler ran: a head over the server's limit, or a malformed one. The server
// answers it in the shape of the surface its path is under (docs/PROTOCOL.md 5).
type HeadError struct {
	Message string
	// Malformed: the head is not HTTP; else it is over the limit, in the request line
	// when InURI, else in the headers.
	Malformed, InURI bool
}

func (e *HeadError) Error() string { return e.Message }

// Kind is how a failure is answered. Each surface maps a Kind to its own status with one
// table (the HTTP status in internal/httpx, OpenAI's error type in internal/openai, the
// gRPC status in internal/grpcapi); docs/PROTOCOL.md 5 lists them all.
type Kind uint8

// Kinds.
const (
	// KindInternal: a bug. The detail goes to the log only.
	KindInternal Kind = iota
	// KindInvalid: the request cannot be served as sent (malformed, a bad field, a
	// refusal of the upstream's own validation).
	KindInvalid
	// KindUnauthenticated: no valid key.
	KindUnauthenticated
	// KindNotFound: an unknown model or route.
	KindNotFound
	// KindTooLarge: a body over the limit.
	KindTooLarge
	// KindBodyTimeout: a body that did not arrive in time.
	KindBodyTimeout
	// KindRateLimited: the upstream throttled or is not ready, or the caller's key is over
	// one of its limits. Retry after RetryAfter.
	KindRateLimited
	// KindTimeout: the model's or the gateway's deadline.
	KindTimeout
	// KindUnavailable: the upstream unavailable, the gateway overloaded or draining.
	// Retry after RetryAfter.
	KindUnavailable
	// KindUpstream: the upstream failed or answered unusably.
	KindUpstream
	// KindCredentials: the upstream refused the gateway's own credentials.
	KindCredentials
	// KindNoCredentials: the gateway has no credentials of its own to call the upstream
	// with, so it did not call it.
	KindNoCredentials
	// KindCanceled: the client went away.
	KindCanceled
	// KindWrongMethod: a REST path served for another method.
	KindWrongMethod
	// KindURITooLong: a REST request line that runs past the head's limit (HeadError).
	KindURITooLong
	// KindHeadersTooLarge: REST headers that run past the head's limit (HeadError).
	KindHeadersTooLarge
)

// codeOf is each Kind's status code in the contract's vocabulary (docs/PROTOCOL.md 5):
// gRPC's code names in snake case, which REST error bodies, stream error lines, the
// access log and the metrics carry.
var codeOf = [...]string{
	KindInternal:        "internal",
	KindInvalid:         "invalid_argument",
	KindUnauthenticated: "unauthenticated",
	KindNotFound:        "not_found",
	KindTooLarge:        "resource_exhausted",
	KindBodyTimeout:     "deadline_exceeded",
	KindRateLimited:     "resource_exhausted",
	KindTimeout:         "deadline_exceeded",
	KindUnavailable:     "unavailable",
	KindUpstream:        "unavailable",
	KindCredentials:     "internal",
	KindNoCredentials:   "unavailable",
	KindCanceled:        "canceled",
	KindWrongMethod:     "unimplemented",
	KindURITooLong:      "resource_exhausted",
	KindHeadersTooLarge: "resource_exhausted",
}

// nameOf is each Kind's name in the audit trail's error_kind (docs/PROTOCOL.md 17).
var nameOf = [...]string{
	KindInternal:        "internal",
	KindInvalid:         "invalid",
	KindUnauthenticated: "unauthenticated",
	KindNotFound:        "not_found",
	KindTooLarge:        "too_large",
	KindBodyTimeout:     "body_timeout",
	KindRateLimited:     "rate_limited",
	KindTimeout:         "timeout",
	KindUnavailable:     "unavailable",
	KindUpstream:        "upstream",
	KindCredentials:     "credentials",
	KindNoCredentials:   "no_credentials",
	KindCanceled:        "canceled",
	KindWrongMethod:     "wrong_method",
	KindURITooLong:      "uri_too_long",
	KindHeadersTooLarge: "headers_too_large",
}

// Kinds is the number of kinds, for surfaces' tables and their tests.
const Kinds = len(codeOf)

// Code is k's status code as the contract spells it ("resource_exhausted").
func (k Kind) Code() string { return codeOf[k] }

// String is k's name ("rate_limited").
func (k Kind) String() string { return nameOf[k] }

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
	// Reason refines the Kind where a surface tells causes apart: one of the Reason
	// constants, or empty. OpenAI's API answers it as its error code.
	Reason string
	// Limit names the key's limit a refusal is about (docs/PROTOCOL.md 14.2), which the
	// Nirmata body carries; empty otherwise.
	Limit string
}

// Classified is an error that says how it is answered: the upstream client's (its own
// exception codes are read in its package, internal/bedrock), a key over its limits.
type Classified interface {
	error
	Failure() Failure
}

// RetrySoon is what a failure that a retry may soon overcome tells the client to wait.
const RetrySoon = time.Second

// Classify is the one place that decides how an error is answered. It checks in order:
// context errors, the gateway's own errors and those that are Classified, then refusals
// of the request. The message is bounded: some quote input, and the upstream's may too.
// ctx is the call's: a call the drain cancelled is told the gateway is shutting down, not
// that it was canceled.
func Classify(ctx context.Context, err error) Failure {
	if errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx), ErrDraining) {
		err = ErrDraining
	}
	f := classify(err)
	f.Message = clip.Message(f.Message)
	return f
}

func classify(err error) Failure {
	var classified Classified
	var refused *RequestError
	var route *RouteError
	var head *HeadError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Failure{Kind: KindTimeout, Message: "the upstream model did not answer in time"}
	case errors.Is(err, context.Canceled):
		return Failure{Kind: KindCanceled, Message: "request canceled"}
	case errors.Is(err, ErrUnauthenticated):
		return Failure{Kind: KindUnauthenticated, Message: err.Error()}
	case errors.Is(err, ErrOverloaded):
		return Failure{Kind: KindUnavailable, Message: ErrOverloaded.Error(), RetryAfter: RetrySoon}
	case errors.Is(err, ErrDraining):
		// The sentinel's text alone: a call the drain cut is often an upstream read that
		// failed with it, whose wrapping says nothing to the client.
		return Failure{Kind: KindUnavailable, Message: ErrDraining.Error(), RetryAfter: RetrySoon}
	case errors.As(err, &classified):
		return classified.Failure()
	case errors.Is(err, ErrBodyTooLarge):
		return Failure{Kind: KindTooLarge, Message: err.Error()}
	case errors.Is(err, ErrBodyTimeout):
		return Failure{Kind: KindBodyTimeout, Message: err.Error()}
	case errors.As(err, &refused):
		return Failure{Kind: KindInvalid, Message: err.Error(), Param: refused.Param, Reason: refused.Reason}
	case errors.As(err, &head):
		switch {
		case head.Malformed:
			return Failure{Kind: KindInvalid, Message: head.Message, Reason: ReasonInvalidValue}
		case head.InURI:
			return Failure{Kind: KindURITooLong, Message: head.Message}
		}
		return Failure{Kind: KindHeadersTooLarge, Message: head.Message}
	case errors.As(err, &route) && route.WrongMethod:
		return Failure{Kind: KindWrongMethod, Message: route.Message}
	case route != nil:
		return Failure{Kind: KindNotFound, Message: route.Message}
	case errors.Is(err, ErrUpstream):
		return Failure{Kind: KindUpstream, Message: err.Error()}
	}
	return Failure{Kind: KindInternal, Message: "internal error", Logged: true}
}
