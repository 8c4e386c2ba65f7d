package observe

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/metrics"
)

// The server span of each call (docs/PROTOCOL.md 14.6), which carries counts, names and
// outcomes, never prompt text, tool arguments or results, reasoning, or a key.

// Attributes of the gateway's own.
const (
	attrRequestID    = attribute.Key("gateway.request_id")
	attrClientType   = attribute.Key("gateway.client_type")
	attrRequestModel = attribute.Key("gateway.request.model")
	attrModel        = attribute.Key("gateway.model")
	attrOutcome      = attribute.Key("gateway.outcome")
	// attrCostUSD is what a chat call cost (docs/PROTOCOL.md 17.1): the GenAI semantic
	// conventions have no attribute for cost.
	attrCostUSD = attribute.Key("gateway.cost_usd")
)

// Trace starts the call's server span, a child of the trace context carrier holds (W3C
// traceparent from HTTP headers or gRPC metadata), and returns ctx with it; End ends it.
// route is the HTTP route pattern ("POST /llm-apps/chat"), "" for gRPC. With tracing off
// it returns ctx, and does nothing else.
func (c *Call) Trace(ctx context.Context, route string, carrier propagation.TextMapCarrier) context.Context {
	t := c.o.tracing
	if !t.On() {
		return ctx
	}
	call := c
	ctx = t.Extract(ctx, carrier)
	name := route
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, attrRequestID.String(call.RequestID))
	if call.Transport == metrics.TransportGRPC {
		name = strings.TrimPrefix(call.Method, "/")
		attrs = append(attrs, semconv.RPCSystemNameGRPC, semconv.RPCMethod(name))
	} else {
		_, path, _ := strings.Cut(route, " ")
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String(call.Method), semconv.HTTPRoute(path))
	}
	ctx, call.span = t.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx
}

// serverFaults are the outcomes that are the gateway's or Bedrock's fault, which mark a
// server span as failed; a client's mistake is its outcome only (semconv's rule for gRPC
// and HTTP server spans).
var serverFaults = map[string]bool{"unknown": true, "deadline_exceeded": true, "unimplemented": true,
	"internal": true, "unavailable": true, "data_loss": true}

// endSpan ends the call's server span with its outcome.
func (c *Call) endSpan() {
	span := c.span
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attrOutcome.String(c.Code))
	if c.Status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(c.Status))
	} else {
		attrs = append(attrs, semconv.RPCResponseStatusCode(strings.ToUpper(c.Code)))
	}
	if c.Result.ClientType != "" {
		attrs = append(attrs, attrClientType.String(clip.String(c.Result.ClientType, clip.LogMax)))
	}
	if c.Result.RequestModel != "" {
		attrs = append(attrs, attrRequestModel.String(clip.String(c.Result.RequestModel, clip.LogMax)))
	}
	if c.Result.Model != "" {
		attrs = append(attrs, attrModel.String(clip.String(c.Result.Model, clip.LogMax)))
	}
	if c.Route == metrics.RouteChat || c.Route == metrics.RouteChatStream {
		attrs = append(attrs, attrCostUSD.Float64(c.Result.CostUSD))
	}
	if c.Code != "ok" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(c.Code))
		if serverFaults[c.Code] {
			span.SetStatus(otelcodes.Error, c.Code)
		}
	}
	span.SetAttributes(attrs...)
	span.End()
}
