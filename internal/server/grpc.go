package server

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/metrics"
)

// chatServer implements llmgatewayv1.ChatServiceServer over a Service.
type chatServer struct {
	llmgatewayv1.UnimplementedChatServiceServer
	svc *Service
	log *zap.Logger
	// writeTimeout bounds one Send to a client that stopped reading (see ChatStream).
	writeTimeout time.Duration
}

// Chat implements [llmgatewayv1.ChatServiceServer].
func (c *chatServer) Chat(ctx context.Context, req *llmgatewayv1.ChatRequest) (*llmgatewayv1.ChatResponse, error) {
	resp, err := c.svc.Chat(ctx, req)
	if err != nil {
		return nil, grpcError(ctx, c.log, err)
	}
	return resp, nil
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
func (c *chatServer) ChatStream(req *llmgatewayv1.ChatRequest, ss grpc.ServerStreamingServer[llmgatewayv1.ChatStreamEvent]) error {
	ctx := ss.Context()
	st, err := c.svc.OpenStream(ctx, req)
	if err != nil {
		return grpcError(ctx, c.log, err)
	}
	var sendingSince atomic.Int64 // UnixNano when the Send under way began; 0 between Sends
	done := make(chan error, 1)
	go func() {
		defer st.Close()
		done <- c.relay(ctx, st, ss, &sendingSince)
	}()
	timer := time.NewTimer(c.writeTimeout)
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-timer.C:
			var waited time.Duration
			if since := sendingSince.Load(); since != 0 {
				waited = time.Since(time.Unix(0, since))
			}
			if waited >= c.writeTimeout {
				return status.Errorf(codes.DeadlineExceeded, "the client took no stream message for %v", waited.Round(time.Second))
			}
			timer.Reset(c.writeTimeout - waited)
		}
	}
}

// relay sends the stream's events until it ends, marking each Send in sendingSince.
func (c *chatServer) relay(ctx context.Context, st *Stream, ss grpc.ServerStreamingServer[llmgatewayv1.ChatStreamEvent], sendingSince *atomic.Int64) (err error) {
	send := func(ev *llmgatewayv1.ChatStreamEvent) error {
		sendingSince.Store(time.Now().UnixNano())
		defer sendingSince.Store(0)
		return ss.Send(ev)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = send(errorEvent(errClass{code: codes.Internal, message: "internal error"}))
			err = recovered(ctx, c.log, p)
		}
	}()
	var events []chat.Event
	for {
		events, err = st.Next(events[:0])
		for _, ev := range events {
			p := EventToProto(ev)
			if p == nil {
				continue
			}
			if serr := send(p); serr != nil {
				return serr // the client is gone; its context cancels the upstream call
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			cl := answer(ctx, c.log, err)
			_ = send(errorEvent(cl))
			return status.Error(cl.code, cl.message)
		}
	}
}

// GetCapabilities implements [llmgatewayv1.ChatServiceServer].
func (c *chatServer) GetCapabilities(ctx context.Context, req *llmgatewayv1.GetCapabilitiesRequest) (*llmgatewayv1.Capabilities, error) {
	caps, err := c.svc.Capabilities(req.GetModel())
	if err != nil {
		return nil, grpcError(ctx, c.log, err)
	}
	return caps, nil
}

// GRPCOptions configures the gRPC server.
type GRPCOptions struct {
	Keys *Keyring
	// MaxMsgBytes matches the REST body limit.
	MaxMsgBytes int
	// Base, when cancelled, cancels every call (the end of a drain); nil means never.
	Base context.Context
	// StreamWriteTimeout bounds one Send of ChatStream to a client that stopped reading;
	// zero means defaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
}

// NewGRPCServer returns a gRPC server with ChatService, server reflection and
// grpc.health.v1 registered.
func NewGRPCServer(svc *Service, opts GRPCOptions, log *zap.Logger) (*grpc.Server, *health.Server) {
	i := &interceptors{base: opts.Base, log: log, access: accessLog(log), metrics: svc.opts.Metrics}
	gate := &keyGate{keys: opts.Keys, access: accessLog(log), metrics: svc.opts.Metrics, slots: make(chan struct{}, maxKeylessReceives)}
	s := grpc.NewServer(
		grpc.MaxRecvMsgSize(opts.MaxMsgBytes),
		// A call's metadata is read before anything else, keyless calls' included: grpc-go
		// would take 16 MiB of it per call. REST bounds headers the same way.
		grpc.MaxHeaderListSize(maxHeaderListBytes),
		// Connections that carry no call for this long are closed, as REST's idle ones.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: maxConnectionIdle}),
		grpc.InTapHandle(gate.tap),
		grpc.ChainUnaryInterceptor(i.unary),
		grpc.ChainStreamInterceptor(i.stream),
	)
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = defaultStreamWriteTimeout
	}
	llmgatewayv1.RegisterChatServiceServer(s, &chatServer{svc: svc, log: log, writeTimeout: opts.StreamWriteTimeout})
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(llmgatewayv1.ChatService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	reflection.Register(s)
	return s, hs
}

// Bounds on what a caller without a key can make the gRPC server hold.
const (
	// maxKeylessReceives bounds the messages being received at once by calls without a
	// valid key, to the methods that need none (capabilities, health, reflection). A message
	// is read whole before a handler sees it, up to MaxMsgBytes, so this bound is what caps
	// the memory strangers can take: the legitimate ones are a few bytes and received in
	// microseconds. A call holds its place only while a message arrives, so long-lived
	// health watches and reflection streams do not lock others out.
	maxKeylessReceives = 2
	// maxHeaderListBytes bounds a call's metadata.
	maxHeaderListBytes = 64 << 10
	// maxConnectionIdle closes connections without calls.
	maxConnectionIdle = 2 * time.Minute
)

// keyGate checks keys in the transport, before a call's message is read or decoded (an
// interceptor runs after both): a ChatService call without exactly one valid
// authorization value is refused for the cost of its headers, and what it sends after is
// discarded unread.
type keyGate struct {
	keys    *Keyring
	access  *zap.Logger
	metrics *metrics.Metrics
	// slots holds one token per keyless message being received (maxKeylessReceives).
	slots chan struct{}
}

type keyIDKey struct{}

// keyless is the place a keyless call took in keyGate.slots to receive its first message;
// it is put in the call's context.
type keyless struct {
	slots chan struct{}
	once  sync.Once
}

type keylessKey struct{}

// release gives the place back; only the first call counts.
func (k *keyless) release() { k.once.Do(func() { <-k.slots }) }

// keylessStream receives a keyless stream's messages one place at a time: the first under
// the place the tap took, each later one under a place of its own, waited for.
type keylessStream struct {
	grpc.ServerStream
	k     *keyless
	first bool
}

// RecvMsg implements [grpc.ServerStream].
func (s *keylessStream) RecvMsg(m any) error {
	if !s.first {
		s.first = true
		defer s.k.release()
		return s.ServerStream.RecvMsg(m)
	}
	select {
	case s.k.slots <- struct{}{}:
	case <-s.Context().Done():
		return status.FromContextError(s.Context().Err()).Err()
	}
	defer func() { <-s.k.slots }()
	return s.ServerStream.RecvMsg(m)
}

// tap implements [tap.ServerInHandle]. It runs on the connection's reader goroutine, so it
// only hashes and compares.
func (g *keyGate) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if !g.keys.enabled() {
		return ctx, nil
	}
	if keyID, ok := g.keys.checkOne(info.Header.Get("authorization")); ok {
		return context.WithValue(ctx, keyIDKey{}, keyID), nil
	}
	if !openMethod(info.FullMethodName) {
		return nil, g.refuse(info.FullMethodName, codes.Unauthenticated, metrics.RejectUnauthenticated, errUnauthenticated.Error())
	}
	select {
	case g.slots <- struct{}{}:
		k := &keyless{slots: g.slots}
		// The interceptors give the place back once the message is in; the stream's
		// context ends with the call however it ends, so the place never leaks.
		context.AfterFunc(ctx, k.release)
		return context.WithValue(ctx, keylessKey{}, k), nil
	default:
		return nil, g.refuse(info.FullMethodName, codes.ResourceExhausted, metrics.RejectOverloaded,
			"too many calls without an API key are sending at once; retry shortly, or send your key")
	}
}

// refuse counts and logs a call the gate turns away.
func (g *keyGate) refuse(method string, code codes.Code, reason, msg string) error {
	g.metrics.Rejected(reason)
	route := grpcRoutes[method]
	if route == "" {
		route = "grpc_other"
	}
	g.metrics.Request(route, codeName(code), "", "", 0)
	g.access.Info("grpc",
		zap.String("request_id", newRequestID()),
		zap.String("method", clip.String(method, clip.LogMax)),
		zap.String("code", codeName(code)))
	return status.Error(code, msg)
}

// interceptors add a request id and log each call; keys were checked by keyGate.
type interceptors struct {
	base    context.Context
	log     *zap.Logger
	access  *zap.Logger // see accessLog
	metrics *metrics.Metrics
}

// grpcRoutes name the ChatService methods for metrics.
var grpcRoutes = map[string]string{
	llmgatewayv1.ChatService_Chat_FullMethodName:            metrics.RouteGRPCChat,
	llmgatewayv1.ChatService_ChatStream_FullMethodName:      metrics.RouteGRPCChatStream,
	llmgatewayv1.ChatService_GetCapabilities_FullMethodName: metrics.RouteGRPCCapabilities,
}

// openMethod is true for methods that need no key: capabilities, health, reflection.
func openMethod(method string) bool {
	return method == llmgatewayv1.ChatService_GetCapabilities_FullMethodName ||
		!strings.HasPrefix(method, "/"+llmgatewayv1.ChatService_ServiceDesc.ServiceName+"/")
}

func (i *interceptors) admit(ctx context.Context, method string) context.Context {
	id := newRequestID()
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-request-id", id))
	info := &callInfo{start: time.Now(), route: grpcRoutes[method]}
	info.keyID, _ = ctx.Value(keyIDKey{}).(string)
	return withCallInfo(withRequestID(ctx, id), info)
}

// withBase makes ctx end when the server's base context does, with its cause.
func (i *interceptors) withBase(ctx context.Context) (context.Context, func()) {
	if i.base == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(i.base, func() { cancel(context.Cause(i.base)) })
	return ctx, func() { stop(); cancel(nil) }
}

func (i *interceptors) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	ctx, release := i.withBase(ctx)
	defer release()
	if k, ok := ctx.Value(keylessKey{}).(*keyless); ok {
		k.release() // the message is in
	}
	ctx = i.admit(ctx, info.FullMethod)
	defer func() {
		if p := recover(); p != nil {
			err = recovered(ctx, i.log, p)
		}
		i.logCall(ctx, info.FullMethod, start, err)
	}()
	return handler(ctx, req)
}

func (i *interceptors) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	start := time.Now()
	ctx, release := i.withBase(ss.Context())
	defer release()
	ctx = i.admit(ctx, info.FullMethod)
	defer func() {
		if p := recover(); p != nil {
			err = recovered(ctx, i.log, p)
		}
		i.logCall(ctx, info.FullMethod, start, err)
	}()
	if k, ok := ctx.Value(keylessKey{}).(*keyless); ok {
		ss = &keylessStream{ServerStream: ss, k: k}
	}
	return handler(srv, &serverStream{ServerStream: ss, ctx: ctx})
}

// accessLog is log for the access log's lines, without the caller: it would name the same
// line every time, and finding it walks the stack on every request.
func accessLog(log *zap.Logger) *zap.Logger { return log.WithOptions(zap.WithCaller(false)) }

// recovered turns a panic into Internal, keeping the detail in the log only. Call it from
// the deferred function that recovered p: the stack starts at the panic's caller.
func recovered(ctx context.Context, log *zap.Logger, p any) error {
	log.Error("panic serving request", zap.String("request_id", requestID(ctx)), zap.Any("panic", p), zap.StackSkip("stack", 2))
	return status.Error(codes.Internal, "internal error")
}

func (i *interceptors) logCall(ctx context.Context, method string, start time.Time, err error) {
	if !strings.HasPrefix(method, "/"+llmgatewayv1.ChatService_ServiceDesc.ServiceName+"/") {
		return // health probes and reflection would drown the log
	}
	info := callInfoFrom(ctx)
	if info.code == "" && err != nil {
		info.code = codeName(status.Code(err))
	}
	info.finish(i.metrics)
	i.access.Info("grpc",
		zap.String("request_id", requestID(ctx)),
		zap.String("method", method),
		zap.String("code", codeName(status.Code(err))),
		zap.Duration("latency", time.Since(start)),
		info.fields())
}

// serverStream carries the request id in the stream's context.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context implements [grpc.ServerStream].
func (s *serverStream) Context() context.Context { return s.ctx }
