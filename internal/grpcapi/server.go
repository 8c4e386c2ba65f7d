// Package grpcapi is the gateway's gRPC surface (docs/PROTOCOL.md 6): the llmgateway.v1
// ChatService on the chat core, with server reflection and grpc.health.v1. Keys are
// checked in the transport, before a call's message is read (see keyGate); each
// ChatService call maps its proto into the chat model, calls the core, maps the answer
// back, and is observed (logged, counted, traced) by one interceptor (internal/observe). Errors are google.rpc.Status
// values with ErrorInfo and, when a retry may help, RetryInfo.
package grpcapi

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/auth"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/observe"
)

// Options configures the gRPC server.
type Options struct {
	Keys *auth.Keyring
	// MaxMsgBytes matches the REST body limit.
	MaxMsgBytes int
	// Base, when cancelled, cancels every ChatService call (the end of a drain), with its
	// cause; nil means never.
	Base context.Context
	// StreamWriteTimeout bounds one Send of ChatStream to a client that stopped reading.
	StreamWriteTimeout time.Duration
	// Observer observes every ChatService call.
	Observer *observe.Observer
}

// Bounds on what a caller can make the gRPC server hold.
const (
	// maxHeaderListBytes bounds a call's metadata, which grpc-go reads before anything
	// else, keyless calls' included: it would take 16 MiB per call. REST bounds headers
	// the same way.
	maxHeaderListBytes = 64 << 10
	// maxConnectionIdle closes connections without calls, as REST's idle ones.
	maxConnectionIdle = 2 * time.Minute
)

// NewServer returns a gRPC server with ChatService, server reflection and grpc.health.v1
// registered, and the health server, which the drain turns not-serving.
func NewServer(svc *core.Service, opts Options) (*grpc.Server, *health.Server) {
	gate := newKeyGate(opts.Keys, svc, opts.Observer)
	chat := &chatService{svc: svc, obs: opts.Observer, base: opts.Base, writeTimeout: opts.StreamWriteTimeout}
	s := grpc.NewServer(
		grpc.MaxRecvMsgSize(opts.MaxMsgBytes),
		grpc.MaxHeaderListSize(maxHeaderListBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: maxConnectionIdle}),
		grpc.InTapHandle(gate.tap),
		grpc.ChainUnaryInterceptor(gate.unary, chat.observe),
		grpc.ChainStreamInterceptor(gate.stream, chat.stream),
	)
	llmgatewayv1.RegisterChatServiceServer(s, chat)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(llmgatewayv1.ChatService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	reflection.Register(s)
	return s, hs
}
