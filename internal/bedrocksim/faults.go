package bedrocksim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// FaultKind names an injected failure.
type FaultKind string

// Fault kinds. Throttle, unavailable, internal and model_not_ready answer with the matching
// error before any byte of a body; hang never answers; stream_exception and truncate only
// apply to ConverseStream, after a 200 and a few events; redacted_thinking and
// invalid_tool_args change the answer.
const (
	FaultThrottle        FaultKind = "throttle"         // 429 ThrottlingException
	FaultUnavailable     FaultKind = "unavailable"      // 503 ServiceUnavailableException
	FaultInternal        FaultKind = "internal"         // 500 InternalServerException
	FaultModelNotReady   FaultKind = "model_not_ready"  // 429 ModelNotReadyException
	FaultHang            FaultKind = "hang"             // no answer until the request ends
	FaultStreamException FaultKind = "stream_exception" // 200, events, then an exception frame
	FaultTruncate        FaultKind = "truncate"         // 200, events, then the body ends
	// FaultRedactedThinking answers Claude's reasoning as one redacted block instead of a
	// thinking block (no effect on an answer without Claude's thinking).
	FaultRedactedThinking FaultKind = "redacted_thinking"
	// FaultInvalidToolArgs gives the calls of an answer arguments that break their tool's
	// schema (breakArgs), so that the gateway's validation and repair can be shown. It is
	// checked apart from the other kinds, once the answer is built, and applies only to an
	// answer that calls a tool whose arguments it can break (not strict, docs/BEDROCK.md I5);
	// Times counts those answers only, whatever else the simulator answers in between.
	FaultInvalidToolArgs FaultKind = "invalid_tool_args"
)

// FaultKinds lists every kind, in the order help texts show them.
var FaultKinds = []FaultKind{FaultThrottle, FaultUnavailable, FaultInternal, FaultModelNotReady, FaultHang, FaultStreamException, FaultTruncate, FaultRedactedThinking, FaultInvalidToolArgs}

// FaultHelp describes the fault syntax, for help texts and errors.
const FaultHelp = `KIND[,OPTION=VALUE...]
  kinds: throttle, unavailable, internal, model_not_ready (an error before any byte),
         hang (no answer until the request ends),
         stream_exception, truncate (streams only: a few events, then the failure),
         redacted_thinking (Claude's reasoning answered as a redacted block),
         invalid_tool_args (tool calls whose arguments break the tool's schema;
           times=N counts only answers that call a tool)
  options: times=N (only the first N requests), mode=stream|unary,
           exception=<Bedrock exception, e.g. modelStreamErrorException>
             (stream_exception; default throttlingException),
           after=N (events before a stream_exception or truncate; default 3),
           model=<model id> (only requests to that model: the id as sent, or its
             foundation model), region=<AWS region> (only requests signed for that
             region: the SigV4 credential scope's; a Bedrock API key has none)
  e.g. "throttle,times=2", "stream_exception,exception=modelStreamErrorException,after=5",
       "throttle,region=us-east-1", "unavailable,model=us.anthropic.claude-sonnet-4-20250514-v1:0,times=1"`

// defaultAfterEvents is how many stream events precede an in-stream fault: messageStart and
// two text deltas, so the client has already forwarded something when the stream breaks.
const defaultAfterEvents = 3

// Fault is one injected failure. Faults are checked in order for every request that passed
// validation; the first one that applies is used and counted. invalid_tool_args is checked
// apart, after the answer is built (faultCounter.takeInvalidArgs).
type Fault struct {
	Kind FaultKind
	// Times limits the fault to the first Times requests it applies to (invalid_tool_args:
	// answers that call a tool); 0 means every one.
	Times int
	// Stream restricts the fault to ConverseStream (true) or Converse (false); nil means both.
	// stream_exception and truncate never apply to Converse.
	Stream *bool
	// ExceptionType is the :exception-type of a stream_exception, in Bedrock's camelCase
	// (throttlingException, validationException, internalServerException,
	// modelStreamErrorException, serviceUnavailableException) or PascalCase.
	// Empty means throttlingException.
	ExceptionType string
	// AfterEvents is how many events a stream_exception or truncate stream carries before the
	// fault; 0 means 3.
	AfterEvents int
	// Model limits the fault to requests to one model: the id as the request names it, or
	// the foundation model it resolves to; empty means every model.
	Model string
	// Region limits the fault to requests signed for one region (SigningRegion), so a
	// gateway's failover between regions can be shown with one simulator serving them all;
	// empty means every region.
	Region string
}

// target is what a fault's scope is matched against: one model request.
type target struct {
	stream bool
	// model is the model id as the request named it, foundation the foundation model it
	// resolved to.
	model, foundation string
	// region is the region of the request's SigV4 credential scope; "" for a Bedrock API
	// key.
	region string
}

// scoped reports whether the fault's model and region take in t.
func (f Fault) scoped(t target) bool {
	return (f.Model == "" || f.Model == t.model || f.Model == t.foundation) && (f.Region == "" || f.Region == t.region)
}

func (f Fault) appliesTo(t target) bool {
	if !f.scoped(t) {
		return false
	}
	stream := t.stream
	switch f.Kind {
	case FaultThrottle, FaultUnavailable, FaultInternal, FaultModelNotReady, FaultHang, FaultRedactedThinking:
	case FaultStreamException, FaultTruncate:
		if !stream {
			return false
		}
	default:
		return false
	}
	return f.Stream == nil || *f.Stream == stream
}

func (f Fault) afterEvents() int {
	if f.AfterEvents > 0 {
		return f.AfterEvents
	}
	return defaultAfterEvents
}

// exceptionType is the :exception-type header value: Bedrock spells it in camelCase.
func (f Fault) exceptionType() string {
	t := f.ExceptionType
	if t == "" {
		return "throttlingException"
	}
	if t[0] >= 'A' && t[0] <= 'Z' {
		t = string(t[0]-'A'+'a') + t[1:]
	}
	return t
}

// exceptionCode is the exception's code as X-Amzn-ErrorType spells it (PascalCase).
func (f Fault) exceptionCode() string {
	t := f.exceptionType()
	return strings.ToUpper(t[:1]) + t[1:]
}

// faultError is the answer a pre-body fault gives.
func faultError(k FaultKind) *apiError {
	e := map[FaultKind]apiError{
		FaultThrottle:      {Code: codeThrottling, Status: http.StatusTooManyRequests},
		FaultUnavailable:   {Code: codeServiceUnavailable, Status: http.StatusServiceUnavailable},
		FaultInternal:      {Code: codeInternalServer, Status: http.StatusInternalServerError},
		FaultModelNotReady: {Code: codeModelNotReady, Status: http.StatusTooManyRequests},
	}[k]
	e.Message = errorMessage(e.Code)
	return &e
}

// errorMessage is the text Bedrock sends with each error code (the common wording).
func errorMessage(code string) string {
	switch code {
	case codeThrottling:
		return "Too many requests, please wait before trying again."
	case codeServiceUnavailable:
		return "Bedrock is unable to process your request."
	case codeInternalServer:
		return "The system encountered an unexpected error during processing. Try your request again."
	case codeModelNotReady:
		return "Model is not ready to serve inference requests. The model may be loading; try again later."
	case codeModelStreamError:
		return "The model encountered an error while streaming the response. Try your request again."
	case codeValidation:
		return "The model returned the following errors: Input is too long for requested model."
	case codeModelTimeout:
		return "Model has timed out in processing the request. Try your request again."
	}
	return "The simulator injected a " + code + "."
}

// faultCounter counts how often each fault was used; it is shared by concurrent requests.
type faultCounter struct {
	mu     sync.Mutex
	faults []Fault
	used   []int
	// breaksArgs: an invalid_tool_args fault is among faults, so answers that call a tool
	// are looked at.
	breaksArgs bool
}

func newFaultCounter(faults []Fault) *faultCounter {
	return &faultCounter{faults: append([]Fault(nil), faults...), used: make([]int, len(faults)),
		breaksArgs: slices.ContainsFunc(faults, func(f Fault) bool { return f.Kind == FaultInvalidToolArgs })}
}

// take returns the fault for one request, counting it, or false. invalid_tool_args is not
// among them (appliesTo): takeInvalidArgs counts it.
func (c *faultCounter) take(t target) (Fault, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.faults {
		if !f.appliesTo(t) || (f.Times > 0 && c.used[i] >= f.Times) {
			continue
		}
		c.used[i]++
		return f, true
	}
	return Fault{}, false
}

// takeInvalidArgs reports whether an invalid_tool_args fault applies to an answer whose tool
// calls it can break, counting it. Only such answers are counted: a request refused, faulted
// before its answer, answered in text or calling only strict tools uses up nothing.
func (c *faultCounter) takeInvalidArgs(t target) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.faults {
		if f.Kind != FaultInvalidToolArgs || !f.scoped(t) || (f.Stream != nil && *f.Stream != t.stream) || (f.Times > 0 && c.used[i] >= f.Times) {
			continue
		}
		c.used[i]++
		return true
	}
	return false
}

// ParseFault reads a fault from a flag or config value: the kind, then comma-separated
// options, e.g. "throttle,times=2", "stream_exception,exception=modelStreamErrorException,after=5",
// "hang,mode=unary", "throttle,region=us-east-1,model=us.anthropic.claude-sonnet-4-20250514-v1:0".
// mode is stream or unary (default both).
func ParseFault(spec string) (Fault, error) {
	parts := strings.Split(strings.TrimSpace(spec), ",")
	f := Fault{Kind: FaultKind(strings.TrimSpace(parts[0]))}
	if !slices.Contains(FaultKinds, f.Kind) {
		kinds := make([]string, len(FaultKinds))
		for i, k := range FaultKinds {
			kinds[i] = string(k)
		}
		return Fault{}, fmt.Errorf("unknown fault kind %q; want one of %s", f.Kind, strings.Join(kinds, ", "))
	}
	for _, p := range parts[1:] {
		key, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		var err error
		switch key {
		case "times":
			f.Times, err = strconv.Atoi(value)
		case "after":
			f.AfterEvents, err = strconv.Atoi(value)
		case "exception":
			f.ExceptionType = value
		case "model":
			f.Model = value
			if value == "" {
				err = fmt.Errorf("want a model id")
			}
		case "region":
			f.Region = value
			if value == "" {
				err = fmt.Errorf("want a region, e.g. us-east-1")
			}
		case "mode":
			switch value {
			case "stream", "unary":
				stream := value == "stream"
				f.Stream = &stream
			default:
				err = fmt.Errorf("mode must be stream or unary")
			}
		default:
			err = fmt.Errorf("unknown option; want times, mode, exception, after, model or region")
		}
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: %s: %w", spec, key, err)
		}
	}
	return f, nil
}

// SigningRegion is the region of a SigV4 Authorization header's credential scope
// ("AWS4-HMAC-SHA256 Credential=AKID/20250101/us-west-2/bedrock/aws4_request, …"): the
// region the caller signed for, so one simulator can tell apart the regions of a gateway
// that serves several. It is "" for any other header, a Bedrock API key's included.
func SigningRegion(authorization string) string {
	rest, ok := strings.CutPrefix(authorization, "AWS4-HMAC-SHA256 ")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, "Credential=")
	if !ok {
		return ""
	}
	scope, _, _ := strings.Cut(rest, ",")
	parts := strings.Split(strings.TrimSpace(scope), "/")
	if len(parts) != 5 {
		return ""
	}
	return parts[2]
}
