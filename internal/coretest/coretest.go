// Package coretest builds chat cores on upstreams with bugs, for the transports' tests of
// what a client gets when the gateway itself fails.
package coretest

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/route"
)

// Panicking is an upstream with a bug: every call panics.
type Panicking struct{}

// Converse implements [route.Upstream].
func (Panicking) Converse(context.Context, string, *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error) {
	panic("secret detail of a bug")
}

// ConverseStream implements [route.Upstream].
func (Panicking) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	panic("secret detail of a bug")
}

// PanicsMidStream opens streams whose body panics when read: a bug after the first byte.
type PanicsMidStream struct{ Panicking }

// ConverseStream implements [route.Upstream].
func (PanicsMidStream) ConverseStream(context.Context, string, *bedrock.ConverseRequest) (*bedrock.EventStream, error) {
	return bedrock.NewEventStream(panickingBody{}), nil
}

type panickingBody struct{}

func (panickingBody) Read([]byte) (int, error) { panic("secret detail of a bug") }
func (panickingBody) Close() error             { return nil }

// Service is a core on upstream with small limits and its own metrics.
func Service(upstream route.Upstream, log *zap.Logger) *core.Service {
	return core.New(upstream, core.Options{
		DefaultModel: "us.anthropic.claude-sonnet-4-20250514-v1:0",
		MaxTools:     128, MaxMessages: 100, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 8, Metrics: metrics.New(),
	}, log)
}
