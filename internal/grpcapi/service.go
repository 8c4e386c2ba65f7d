package grpcapi

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
	"github.com/nirmata/llm-gateway/internal/toolguard"
)

// chatService implements llmgatewayv1.ChatServiceServer on the chat core.
type chatService struct {
	llmgatewayv1.UnimplementedChatServiceServer
	svc *core.Service
	obs *observe.Observer
	// base, when cancelled, cancels every call, with its cause (the end of a drain).
	base context.Context
	// writeTimeout bounds one Send to a client that stopped reading (see ChatStream).
	writeTimeout time.Duration
}

// observe is the interceptor of ChatService's unary calls, and stream the one of its
// streams: each call is begun (its id, sent back as x-request-id metadata, its record in
// the handler's context, its server span when tracing is on: docs/PROTOCOL.md 14.6), gets
// a context the drain can cancel, and is ended once the handler returns: a panic becomes
// Internal (its detail logged), and the call is logged and counted. Other services'
// calls (health, reflection) pass unobserved.
func (c *chatService) observe(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (_ any, err error) {
	if !strings.HasPrefix(info.FullMethod, chatMethods) {
		return handler(ctx, req)
	}
	ctx, call, release := c.begin(ctx, info.FullMethod)
	defer release()
	defer c.end(call, &err)
	return handler(ctx, req)
}

// stream is observe for streams.
func (c *chatService) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	if !strings.HasPrefix(info.FullMethod, chatMethods) {
		return handler(srv, ss)
	}
	ctx, call, release := c.begin(ss.Context(), info.FullMethod)
	defer release()
	defer c.end(call, &err)
	return handler(srv, &observedStream{ServerStream: ss, ctx: ctx})
}

// observedStream is a stream whose context holds its call.
type observedStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context implements [grpc.ServerStream].
func (s *observedStream) Context() context.Context { return s.ctx }

func (c *chatService) begin(ctx context.Context, method string) (context.Context, *observe.Call, func()) {
	call := c.obs.Begin(metrics.TransportGRPC, routeOf(method), method, "")
	call.KeyID, _ = ctx.Value(keyIDKey{}).(string)
	md, _ := metadata.FromIncomingContext(ctx)
	call.UserAgent = userAgent(ctx)
	if v := md.Get("x-session-id"); len(v) > 0 {
		call.SessionID = v[0]
	}
	ctx = observe.WithCall(call.Trace(ctx, "", metadataCarrier(md)), call)
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-request-id", call.RequestID))
	if c.base == nil {
		return ctx, call, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.base, func() { cancel(context.Cause(c.base)) })
	return ctx, call, func() { stop(); cancel(nil) }
}

// userAgent is the call's user-agent metadata, as grpc-go passes it on: the client's
// own, then grpc-go's; "" without one.
func userAgent(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if ua := md.Get("user-agent"); len(ua) > 0 {
		return ua[0]
	}
	return ""
}

// setCallHeaders sends what the core did with the call as response header metadata, as
// REST sends it in headers: the request fields accepted without effect
// (docs/PROTOCOL.md 10.1), a spent tool budget (13.5), the thinking outcome (11.4) and
// strict tools left unenforced (13.1).
func setCallHeaders(ctx context.Context, res core.Result) {
	if len(res.Ignored) > 0 {
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-gateway-ignored-params", core.IgnoredValue(res.Ignored)))
	}
	if res.BudgetExhausted {
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-gateway-tool-budget", "exhausted"))
	}
	if res.Thinking != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-gateway-thinking", res.Thinking))
	}
	if res.StrictUnenforced {
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-gateway-strict", toolguard.StrictUnenforced))
	}
}

// toolValidationKey is the metadata of a call's tool validation outcome (docs/PROTOCOL.md
// 13.2): header metadata on Chat, trailer metadata on ChatStream, which learns it at its
// end.
const toolValidationKey = "x-gateway-tool-validation"

// end ends a call begun by begin: a panic becomes Internal (its detail logged), and the
// call is logged and counted. Defer it directly, so it can recover.
func (c *chatService) end(call *observe.Call, err *error) {
	if p := recover(); p != nil {
		*err = statusOf(call.RequestID, call.Recovered("request", p)).Err()
	}
	call.End()
}

// fail classifies err and returns the status a client gets.
func fail(ctx context.Context, call *observe.Call, err error) error {
	return statusOf(call.RequestID, call.Fail(ctx, err)).Err()
}

// Chat implements [llmgatewayv1.ChatServiceServer].
func (c *chatService) Chat(ctx context.Context, in *llmgatewayv1.ChatRequest) (out *llmgatewayv1.ChatResponse, err error) {
	call := observe.CallOf(ctx)
	req, err := fromProto(in)
	if err != nil {
		call.Result = c.svc.Named(in.GetModel())
		return nil, fail(ctx, call, err)
	}
	req.ID, req.KeyID, req.UserAgent = call.RequestID, call.KeyID, userAgent(ctx)
	resp, res, err := c.svc.Chat(ctx, req)
	call.Result = res
	if err != nil {
		return nil, fail(ctx, call, err)
	}
	setCallHeaders(ctx, res)
	if res.ToolValidation != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs(toolValidationKey, res.ToolValidation))
	}
	return responseProto(resp), nil
}

// ChatStream implements [llmgatewayv1.ChatServiceServer]. A failure before the first event
// is the call's status; after it, an error event is sent last and the call ends with the
// same status.
//
// A client that stops reading fills its flow-control window, and Send then blocks with no
// deadline of its own; only the handler's return ends the call. So the stream is relayed
// on a goroutine of its own while the handler watches it: a Send that has waited
// writeTimeout ends the call with DeadlineExceeded, which unblocks the Send, cancels the
// upstream call and frees the stream's max_concurrent slot, as stream_write_timeout does
// for REST.
func (c *chatService) ChatStream(in *llmgatewayv1.ChatRequest, ss grpc.ServerStreamingServer[llmgatewayv1.ChatStreamEvent]) (err error) {
	ctx := ss.Context()
	call := observe.CallOf(ctx)
	req, err := fromProto(in)
	if err != nil {
		call.Result = c.svc.Named(in.GetModel())
		return fail(ctx, call, err)
	}
	req.ID, req.KeyID, req.UserAgent = call.RequestID, call.KeyID, userAgent(ctx)
	st, res, err := c.svc.Stream(ctx, req)
	call.Result = res
	if err != nil {
		return fail(ctx, call, err)
	}
	setCallHeaders(ctx, res)
	var sendingSince atomic.Int64 // UnixNano when the Send under way began; 0 between Sends
	done := make(chan relayed, 1)
	go func() {
		defer st.Close()
		done <- c.relay(ctx, call.RequestID, st, ss, req.StreamReasoning, &sendingSince)
	}()
	if c.writeTimeout <= 0 { // no bound: wait for the relay
		r := <-done
		call.Result, call.Code, call.Reason = r.result, r.code, r.reason
		setStreamTrailer(ss, r.result)
		return r.err
	}
	timer := time.NewTimer(c.writeTimeout)
	defer timer.Stop()
	for {
		select {
		case r := <-done:
			call.Result, call.Code, call.Reason = r.result, r.code, r.reason
			setStreamTrailer(ss, r.result)
			return r.err
		case <-timer.C:
			var waited time.Duration
			if since := sendingSince.Load(); since != 0 {
				waited = time.Since(time.Unix(0, since))
			}
			if waited >= c.writeTimeout {
				f := fault.Failure{Kind: fault.KindTimeout,
					Message: fmt.Sprintf("the client took no stream message for %v", waited.Round(time.Second))}
				call.Answered(f)
				// The relay is stuck in Send: returning ends the call, which unblocks it.
				return statusOf(call.RequestID, f).Err()
			}
			timer.Reset(c.writeTimeout - waited)
		}
	}
}

// setStreamTrailer sends a stream's tool validation outcome as trailer metadata.
func setStreamTrailer(ss grpc.ServerStream, res core.Result) {
	if res.ToolValidation != "" {
		ss.SetTrailer(metadata.Pairs(toolValidationKey, res.ToolValidation))
	}
}

// relayed is how a relay ended: the call's status, its outcome and the reason of a
// failed one (observe.Call's Code and Reason), and what the stream did.
type relayed struct {
	err          error
	code, reason string
	result       core.Result
}

// relay sends the stream's events until it ends, marking each Send in sendingSince. It
// runs on a goroutine of its own, which only it writes to: its outcome goes back through
// done. It recovers from its own panics: the stream ends with an error event and Internal.
func (c *chatService) relay(ctx context.Context, requestID string, st *core.Stream, ss grpc.ServerStreamingServer[llmgatewayv1.ChatStreamEvent], reasoning bool, sendingSince *atomic.Int64) (r relayed) {
	send := func(ev *llmgatewayv1.ChatStreamEvent) error {
		sendingSince.Store(time.Now().UnixNano())
		defer sendingSince.Store(0)
		return ss.Send(ev)
	}
	code, reason := "ok", ""
	defer func() {
		if p := recover(); p != nil {
			f := c.obs.Panicked(requestID, "stream", p)
			s := statusOf(requestID, f)
			r.err, code, reason = s.Err(), f.Kind.Code(), f.Message
			_ = send(errorEvent(s))
		}
		r.code, r.reason, r.result = code, reason, st.Result()
	}()
	var events []chat.Event
	var err error
	for {
		events, err = st.Next(events[:0])
		for i := range events {
			if ev := eventProto(&events[i], reasoning); ev != nil {
				if serr := send(ev); serr != nil {
					code, reason = codeName(status.Code(serr)), "the stream could not be sent to the client: "+status.Convert(serr).Message()
					return relayed{err: serr} // the client is gone; its context cancels the upstream call
				}
			}
		}
		if err == io.EOF {
			return relayed{}
		}
		if err != nil {
			f := c.obs.Failed(ctx, requestID, err)
			code, reason = f.Kind.Code(), f.Message
			s := statusOf(requestID, f)
			_ = send(errorEvent(s))
			return relayed{err: s.Err()}
		}
	}
}

// GetCapabilities implements [llmgatewayv1.ChatServiceServer].
func (c *chatService) GetCapabilities(ctx context.Context, in *llmgatewayv1.GetCapabilitiesRequest) (out *llmgatewayv1.Capabilities, err error) {
	call := observe.CallOf(ctx)
	caps, err := c.svc.Capabilities(in.GetModel())
	if err != nil {
		return nil, fail(ctx, call, err)
	}
	return capabilitiesProto(caps), nil
}

// errorDomain names the gateway in ErrorInfo details.
const errorDomain = "llm-gateway.nirmata.io"

// statusOf is the status a failure is answered with: its code and message, an ErrorInfo
// with the failure's kind as reason, the request id and the limit a key is over, and a
// RetryInfo when a retry may succeed.
func statusOf(requestID string, f fault.Failure) *status.Status {
	s := status.New(statuses[f.Kind].code, f.Message)
	info := &errdetails.ErrorInfo{
		Reason:   statuses[f.Kind].reason,
		Domain:   errorDomain,
		Metadata: map[string]string{"request_id": requestID},
	}
	if f.Limit != "" {
		info.Metadata["limit"] = f.Limit
	}
	details := []protoadapt.MessageV1{info}
	if f.RetryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(f.RetryAfter)})
	}
	if ds, err := s.WithDetails(details...); err == nil {
		return ds
	}
	return s
}

// statuses is the one table of gRPC's answers (docs/PROTOCOL.md 5): each kind's status
// code, whose name is the kind's code (fault.Kind.Code), and its ErrorInfo.reason, in
// UPPER_SNAKE_CASE as google.rpc asks.
var statuses = [fault.Kinds]struct {
	code   codes.Code
	reason string
}{
	fault.KindInternal:        {codes.Internal, "INTERNAL"},
	fault.KindInvalid:         {codes.InvalidArgument, "INVALID_REQUEST"},
	fault.KindUnauthenticated: {codes.Unauthenticated, "UNAUTHENTICATED"},
	fault.KindNotFound:        {codes.NotFound, "MODEL_NOT_FOUND"},
	fault.KindTooLarge:        {codes.ResourceExhausted, "REQUEST_TOO_LARGE"},
	fault.KindBodyTimeout:     {codes.DeadlineExceeded, "BODY_TIMEOUT"},
	fault.KindRateLimited:     {codes.ResourceExhausted, "RATE_LIMITED"},
	fault.KindTimeout:         {codes.DeadlineExceeded, "TIMEOUT"},
	fault.KindUnavailable:     {codes.Unavailable, "UNAVAILABLE"},
	fault.KindUpstream:        {codes.Unavailable, "UPSTREAM_FAILED"},
	fault.KindCredentials:     {codes.Internal, "UPSTREAM_CREDENTIALS_REFUSED"},
	fault.KindNoCredentials:   {codes.Unavailable, "UPSTREAM_CREDENTIALS_MISSING"},
	fault.KindCanceled:        {codes.Canceled, "CANCELED"},
	fault.KindWrongMethod:     {codes.Unimplemented, "METHOD_NOT_ALLOWED"},
	// REST only: net/http's refusals of a head (internal/server Listener).
	fault.KindURITooLong:      {codes.ResourceExhausted, "URI_TOO_LONG"},
	fault.KindHeadersTooLarge: {codes.ResourceExhausted, "HEADERS_TOO_LARGE"},
}

// codeName is the snake-case name of a gRPC code ("resource_exhausted", "ok"), as the
// access log and the metrics carry a call's outcome.
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

// errorEvent is the last event of a stream that failed after it started: the same
// status the call ends with.
func errorEvent(s *status.Status) *llmgatewayv1.ChatStreamEvent {
	p := s.Proto()
	details := make([]*anypb.Any, len(p.GetDetails()))
	copy(details, p.GetDetails())
	return &llmgatewayv1.ChatStreamEvent{Event: &llmgatewayv1.ChatStreamEvent_Error{
		Error: &llmgatewayv1.Status{Code: p.GetCode(), Message: p.GetMessage(), Details: details},
	}}
}

// metadataCarrier carries a call's W3C trace context in its metadata, whose keys are
// lower case.
type metadataCarrier metadata.MD

// Get implements [propagation.TextMapCarrier].
func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set implements [propagation.TextMapCarrier].
func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

// Keys implements [propagation.TextMapCarrier].
func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
