package grpcapi

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// maxKeylessReceives bounds the messages being received at once by calls without a valid
// key, to the methods that need none (capabilities, health, reflection). A message is read
// whole before a handler sees it, up to MaxMsgBytes, so this bound is what caps the memory
// strangers can take: the legitimate ones are a few bytes and received in microseconds. A
// call holds its place only while a message arrives, so long-lived health watches and
// reflection streams do not lock others out.
const maxKeylessReceives = 2

// keyGate checks keys in the transport, before a call's message is read or decoded (an
// interceptor runs after both): a ChatService call without exactly one valid
// authorization value is refused for the cost of its headers, and what it sends after is
// discarded unread.
type keyGate struct {
	keys *auth.Keyring
	svc  *core.Service
	obs  *observe.Observer
	// slots holds one token per keyless message being received (maxKeylessReceives).
	slots chan struct{}
}

func newKeyGate(keys *auth.Keyring, svc *core.Service, obs *observe.Observer) *keyGate {
	return &keyGate{keys: keys, svc: svc, obs: obs, slots: make(chan struct{}, maxKeylessReceives)}
}

// keyIDKey holds the caller's key identity in a call's context; the tap sets it, once,
// before the call starts, and nothing changes it after.
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

// tap implements [tap.ServerInHandle]. It runs on the connection's reader goroutine, so it
// only hashes and compares.
func (g *keyGate) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if !g.keys.Enabled() {
		return ctx, nil
	}
	if keyID, ok := g.keys.Check(info.Header.Get("authorization")); ok {
		return context.WithValue(ctx, keyIDKey{}, keyID), nil
	}
	if !openMethod(info.FullMethodName) {
		g.svc.Metrics().Rejected(metrics.RejectUnauthenticated)
		return nil, g.refuse(ctx, info, fault.Failure{Kind: fault.KindUnauthenticated, Message: fault.ErrUnauthenticated.Error()})
	}
	select {
	case g.slots <- struct{}{}:
		k := &keyless{slots: g.slots}
		// The interceptors give the place back once the message is in; the stream's
		// context ends with the call however it ends, so the place never leaks.
		context.AfterFunc(ctx, k.release)
		return context.WithValue(ctx, keylessKey{}, k), nil
	default:
		g.svc.Metrics().Rejected(metrics.RejectOverloaded)
		return nil, g.refuse(ctx, info, fault.Failure{Kind: fault.KindRateLimited, RetryAfter: time.Second,
			Message: "too many calls without an API key are sending at once; retry shortly, or send your key"})
	}
}

// refuse logs and counts a call the gate turns away, gives it its server span when tracing
// is on (docs/PROTOCOL.md 14.6), and returns its status.
func (g *keyGate) refuse(ctx context.Context, info *tap.Info, f fault.Failure) error {
	method := info.FullMethodName
	call := g.obs.Begin(metrics.TransportGRPC, routeOf(method), method, "")
	call.Answered(f)
	call.Trace(ctx, "", metadataCarrier(info.Header))
	call.End()
	return statusOf(call.RequestID, f).Err()
}

// openMethod is true for methods that need no key: capabilities, health, reflection.
func openMethod(method string) bool {
	return method == llmgatewayv1.ChatService_GetCapabilities_FullMethodName || !strings.HasPrefix(method, chatMethods)
}

// chatMethods is the prefix of ChatService's full method names.
var chatMethods = "/" + llmgatewayv1.ChatService_ServiceDesc.ServiceName + "/"

// routeOf names a method for the metrics.
func routeOf(method string) string {
	switch method {
	case llmgatewayv1.ChatService_Chat_FullMethodName:
		return metrics.RouteChat
	case llmgatewayv1.ChatService_ChatStream_FullMethodName:
		return metrics.RouteChatStream
	case llmgatewayv1.ChatService_GetCapabilities_FullMethodName:
		return metrics.RouteCapabilities
	}
	return metrics.RouteOther
}

// unary gives a keyless call's place back once its message is in.
func (g *keyGate) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if k, ok := ctx.Value(keylessKey{}).(*keyless); ok {
		k.release()
	}
	return handler(ctx, req)
}

// stream receives a keyless stream's messages one place at a time.
func (g *keyGate) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if k, ok := ss.Context().Value(keylessKey{}).(*keyless); ok {
		ss = &keylessStream{ServerStream: ss, k: k}
	}
	return handler(srv, ss)
}

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
