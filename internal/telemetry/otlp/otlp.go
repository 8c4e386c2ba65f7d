// Package otlp sets up the gateway's OpenTelemetry traces (docs/PROTOCOL.md 14.6):
// an OTLP exporter when the OTEL_* variables ask for one, else nothing at all, so a
// gateway without them adds no work to a request. The chat core and the transports make
// the spans (internal/core's trace.go) through internal/telemetry; this package only owns
// the provider and its exporter, and only the composition root imports it.
//
// The variables are read as the OpenTelemetry SDK reads them: the OTLP exporters read
// their own (endpoint, headers, timeout, certificates, compression), the SDK its sampler
// and batching settings, the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
// This package reads only what decides whether and how to export, which no exporter
// reads: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, the endpoints' presence, and
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL.
//
// Contrib's autoexport would read the exporter and protocol variables too, but it
// exports whenever OTEL_TRACES_EXPORTER is unset (to localhost), and it brings the metric
// and log exporters and a Prometheus bridge along; the decision here is a dozen lines.
package otlp

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/telemetry"
)

// ServiceName is the service.name of the gateway's spans when OTEL_SERVICE_NAME sets none.
const ServiceName = "llm-gateway"

// The OTLP transports (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Setup reads the environment and returns the gateway's tracing: exporting over OTLP when
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER is
// set, else off. Export errors are logged to log. Shut it down when the gateway stops.
func Setup(ctx context.Context, version string, log *zap.Logger) (*telemetry.Tracing, error) {
	protocol, err := Protocol(os.Getenv)
	if err != nil || protocol == "" {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter (%s): %w", protocol, err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(ServiceName)}
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (WithFromEnv) win over the defaults.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	// The SDK reports export failures here; its default writes plain text to stderr.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", zap.Error(err))
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	log.Info("exporting traces over OTLP", zap.String("protocol", protocol))
	return telemetry.WithProvider(tp, version), nil
}

// Protocol is the OTLP transport the variables getenv reads ask for (ProtocolHTTP or
// ProtocolGRPC), or "" when they ask for no export: none of OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_TRACES_EXPORTER is set, OTEL_TRACES_EXPORTER
// is none, or OTEL_SDK_DISABLED is true. An exporter or protocol the gateway does not
// have is an error naming the variable. Values are read without regard to case, as the
// specification asks of enumerations.
func Protocol(getenv func(string) string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return "", nil
	}
	exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exporters == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return "", nil
	}
	if exporters != "" {
		otlp := false
		// A comma-separated list, as the specification allows.
		for name := range strings.SplitSeq(exporters, ",") {
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "otlp":
				otlp = true
			case "none":
			default:
				return "", fmt.Errorf("OTEL_TRACES_EXPORTER: exporter %s is not supported; the gateway exports traces with otlp, or none", clip.Quote(strings.TrimSpace(name)))
			}
		}
		if !otlp {
			return "", nil
		}
	}
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := getenv(name)
	if protocol == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = getenv(name)
	}
	switch strings.ToLower(strings.TrimSpace(protocol)) {
	case "", ProtocolHTTP:
		return ProtocolHTTP, nil
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("%s: protocol %s is not supported; use %s (the default) or %s", name, clip.Quote(protocol), ProtocolHTTP, ProtocolGRPC)
}
