// Package telemetry is the gateway's tracing as the chat core and the transports see it
// (docs/PROTOCOL.md 14.6): a tracer, the W3C propagator, and a shutdown, or nil when
// tracing is off, so a gateway without it adds no work to a request. The chat core and
// the transports make the spans (internal/core's trace.go, internal/observe); the OTLP
// exporter and the SDK's provider are set up by internal/telemetry/otlp, which only the
// composition root imports, so that neither the exporters nor gRPC are linked into
// whatever merely makes spans.
package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the gateway's tracer.
const instrumentation = "github.com/nirmata/llm-gateway"

// Provider is a tracer provider that can be shut down: the SDK's, exporting over OTLP
// (internal/telemetry/otlp), or one that records spans in memory in tests.
type Provider interface {
	trace.TracerProvider
	// Shutdown exports the spans not yet exported and stops the exporter, within ctx.
	Shutdown(ctx context.Context) error
}

// Tracing is the gateway's tracing. A nil *Tracing is off.
type Tracing struct {
	provider   Provider
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// WithProvider is tracing through tp, the gateway's tracer named and versioned. Shutdown
// shuts tp down.
func WithProvider(tp Provider, version string) *Tracing {
	return &Tracing{
		provider:   tp,
		tracer:     tp.Tracer(instrumentation, trace.WithInstrumentationVersion(version), trace.WithSchemaURL(semconv.SchemaURL)),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
}

// On reports whether spans are made and exported. When it is false the gateway makes no
// span and calls nothing else here: a request pays nothing for tracing it does not do.
func (t *Tracing) On() bool { return t != nil }

// Tracer is the gateway's tracer. Call it only when On.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Extract returns ctx with the trace context carrier holds: W3C traceparent and
// tracestate, and baggage. Call it only when On.
func (t *Tracing) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	return t.propagator.Extract(ctx, carrier)
}

// Shutdown exports the spans not yet exported and stops the exporter, within ctx. It does
// nothing when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
