package core

import (
	"context"
	"errors"
	"io"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/stream"
)

// The client span `chat <model id>` of each Bedrock call (docs/PROTOCOL.md 14.6), a child
// of the call's server span (internal/observe). It carries counts, names and outcomes,
// never prompt text, tool arguments or results, reasoning, or a key. With tracing off
// none of this runs, and nothing allocates.

// Attributes of the gateway's own, and gen_ai.system, which semconv dropped for
// gen_ai.provider.name but many backends still read.
const (
	attrGenAISystem   = attribute.Key("gen_ai.system")
	attrToolCalls     = attribute.Key("gateway.tool_calls")
	attrRepairAttempt = attribute.Key("gateway.repair_attempt")
)

// maxSpanToolCalls bounds the names gateway.tool_calls lists.
const maxSpanToolCalls = 128

// upstreamSpan is the client span of one Bedrock call; nil when tracing is off, and its
// methods then do nothing.
type upstreamSpan struct{ span trace.Span }

// traceUpstream starts the client span of one Bedrock call of t, sending req: the
// request's first call, or a repair attempt (the check's Attempts is its number). It
// returns ctx with the span, for the call to run under. End it with endAnswer or
// endStream.
func (s *Service) traceUpstream(ctx context.Context, t *turn, req *bedrock.ConverseRequest) (context.Context, *upstreamSpan) {
	if !s.opts.Tracing.On() {
		return ctx, nil
	}
	model := clip.String(t.model.ID, clip.LogMax)
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, semconv.GenAIOperationNameChat, semconv.GenAIProviderNameAWSBedrock, attrGenAISystem.String("aws.bedrock"),
		semconv.GenAIRequestModel(model))
	if region := t.route.Region(); region != "" {
		attrs = append(attrs, semconv.CloudRegion(region))
	} else if s.opts.Region != "" {
		attrs = append(attrs, semconv.CloudRegion(s.opts.Region))
	}
	if ic := req.InferenceConfig; ic != nil && ic.MaxTokens != nil {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(int(*ic.MaxTokens)))
	}
	if c := t.check; c != nil && c.Attempts > 0 {
		n := c.Attempts
		attrs = append(attrs, attrRepairAttempt.Int(n))
	}
	ctx, span := s.opts.Tracing.Tracer().Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, &upstreamSpan{span}
}

// endAnswer ends the span of a call answered whole (resp), or failed (err).
func (u *upstreamSpan) endAnswer(resp *chat.Response, err error) {
	if u == nil {
		return
	}
	if err != nil {
		u.fail(err)
		return
	}
	var names []string
	for _, c := range resp.ToolCalls[:min(len(resp.ToolCalls), maxSpanToolCalls)] {
		names = append(names, c.Name)
	}
	u.end(resp.Usage, resp.StopReason, names)
}

// endStream ends the span of a streamed call once m has read its end (err is io.EOF), or
// the stream failed or was left (any other err).
func (u *upstreamSpan) endStream(m *stream.Machine, err error) {
	if u == nil {
		return
	}
	if err != io.EOF {
		u.fail(err)
		return
	}
	names := m.ToolNames(nil)
	u.end(m.Usage(), m.StopReason(), names[:min(len(names), maxSpanToolCalls)])
}

// end ends a call that Bedrock answered: usage as the gateway reports it (input tokens
// include those read from and written to the prompt cache: docs/PROTOCOL.md 12.3), Bedrock's
// stop reason, and the names of the returned tool calls.
func (u *upstreamSpan) end(usage chat.Usage, stopReason string, toolNames []string) {
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs,
		semconv.GenAIUsageInputTokens(int(usage.PromptTokens)), semconv.GenAIUsageOutputTokens(int(usage.CompletionTokens)),
		semconv.GenAIUsageCacheReadInputTokens(int(usage.CacheReadTokens)),
		semconv.GenAIUsageCacheCreationInputTokens(int(usage.CacheWriteTokens)))
	if stopReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(clip.String(stopReason, clip.QuoteMax)))
	}
	if len(toolNames) > 0 {
		for i, n := range toolNames {
			toolNames[i] = clip.String(n, clip.QuoteMax)
		}
		attrs = append(attrs, attrToolCalls.StringSlice(toolNames))
	}
	u.span.SetAttributes(attrs...)
	u.span.End()
}

// fail ends a failed call: its error.type is Bedrock's error code, or what else ended it
// (spanErrorType), never its message: Bedrock's can quote the request, or name the
// gateway's AWS account.
func (u *upstreamSpan) fail(err error) {
	code := spanErrorType(err)
	u.span.SetAttributes(semconv.ErrorTypeKey.String(code))
	u.span.SetStatus(otelcodes.Error, code)
	u.span.End()
}

// spanErrorType names a failed Bedrock call: the call's own context ending it
// (deadline_exceeded: upstream_timeout; canceled: the client left, or the drain ended
// it), else upstreamCode's name, else _OTHER.
func spanErrorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	if code := upstreamCode(err); code != "" {
		return code
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
