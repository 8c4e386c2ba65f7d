package core

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/telemetry"
)

// TestNoTracingAllocatesNothing: with tracing off a Bedrock call's span costs no
// allocation, and the transports are told to start none.
func TestNoTracingAllocatesNothing(t *testing.T) {
	s, _, _ := repairService(t, &scripted{}, "", 0)
	require.False(t, s.opts.Tracing.On())
	p := &turn{}
	req := &bedrock.ConverseRequest{}
	resp := &chat.Response{ToolCalls: []chat.ToolCall{{Name: "save_policy"}}}
	ctx := t.Context()
	allocs := testing.AllocsPerRun(100, func() {
		got, span := s.traceUpstream(ctx, p, req)
		span.endAnswer(resp, nil)
		span.endStream(nil, io.EOF)
		if got != ctx {
			t.Fatal("the context changed")
		}
	})
	assert.Zero(t, allocs)
}

// tracedService is a repair-mode core whose spans are recorded in memory.
func tracedService(t *testing.T, u route.Upstream) (*Service, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return New(u, Options{
		DefaultModel: modelNoStrict, MaxTools: 10, MaxMessages: 10, MaxMessageBytes: 1 << 20,
		UpstreamTimeout: time.Minute, MaxConcurrent: 4, Metrics: metrics.New(), NoPromptCaching: true,
		ToolValidation: "repair", MaxRepairAttempts: 2,
		Tracing: telemetry.WithProvider(tp, ""), Region: "eu-west-3",
	}, zap.NewNop()), rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestRepairAttemptSpans: each repair attempt is a Bedrock call with a client span of its
// own, numbered, carrying its own usage and calls; together they add up to the usage the
// client gets.
func TestRepairAttemptSpans(t *testing.T) {
	t.Parallel()
	first := answer("1", "", "Saving.", invalidCall)
	first.Usage = &bedrock.TokenUsage{InputTokens: 100, OutputTokens: 10, CacheReadInputTokens: 40, CacheWriteInputTokens: 5}
	u := &scripted{answers: []any{first, answer("2", "", "Retrying.", validCall, listCall)}}
	s, rec := tracedService(t, u)
	req := policyRequest(false)
	req.Model = modelNoStrict
	req.MaxTokens = new(int32(512))
	resp, _, err := s.Chat(t.Context(), req)
	require.NoError(t, err)

	spans := rec.Ended()
	require.Len(t, spans, 2)
	var input, output int64
	for i, sp := range spans {
		a := attrs(sp)
		assert.Equal(t, "chat "+modelNoStrict, sp.Name())
		assert.Equal(t, trace.SpanKindClient, sp.SpanKind())
		assert.Equal(t, otelcodes.Unset, sp.Status().Code)
		assert.Equal(t, "chat", a["gen_ai.operation.name"].AsString())
		assert.Equal(t, "aws.bedrock", a["gen_ai.provider.name"].AsString())
		assert.Equal(t, "aws.bedrock", a["gen_ai.system"].AsString())
		assert.Equal(t, modelNoStrict, a["gen_ai.request.model"].AsString())
		assert.Equal(t, int64(512), a["gen_ai.request.max_tokens"].AsInt64())
		assert.Equal(t, "eu-west-3", a["cloud.region"].AsString())
		assert.Equal(t, []string{"tool_use"}, a["gen_ai.response.finish_reasons"].AsStringSlice())
		input += a["gen_ai.usage.input_tokens"].AsInt64()
		output += a["gen_ai.usage.output_tokens"].AsInt64()
		if i == 0 {
			_, numbered := a["gateway.repair_attempt"]
			assert.False(t, numbered, "the request's first call is no repair")
			assert.Equal(t, []string{"save_policy"}, a["gateway.tool_calls"].AsStringSlice())
			assert.Equal(t, int64(145), a["gen_ai.usage.input_tokens"].AsInt64(), "cache tokens included, as in prompt_tokens")
			assert.Equal(t, int64(40), a["gen_ai.usage.cache_read.input_tokens"].AsInt64())
			assert.Equal(t, int64(5), a["gen_ai.usage.cache_creation.input_tokens"].AsInt64())
		} else {
			assert.Equal(t, int64(1), a["gateway.repair_attempt"].AsInt64())
			assert.Equal(t, []string{"save_policy", "list_policies"}, a["gateway.tool_calls"].AsStringSlice())
		}
	}
	assert.Equal(t, int64(resp.Usage.PromptTokens), input)
	assert.Equal(t, int64(resp.Usage.CompletionTokens), output)
}

// TestFailedCallSpan: a Bedrock error marks the call's span failed with Bedrock's error
// code; its message, which can quote the request or name the gateway's AWS account, is
// not in the span.
func TestFailedCallSpan(t *testing.T) {
	t.Parallel()
	u := &scripted{answers: []any{&bedrock.APIError{Code: "AccessDeniedException", StatusCode: 403,
		Message: "User arn:aws:iam::123456789012:role/gw is not authorized"}}}
	s, rec := tracedService(t, u)
	_, _, err := s.Chat(t.Context(), policyRequest(false))
	require.Error(t, err)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	sp := spans[0]
	assert.Equal(t, otelcodes.Error, sp.Status().Code)
	assert.Equal(t, "AccessDeniedException", sp.Status().Description)
	a := attrs(sp)
	assert.Equal(t, "AccessDeniedException", a["error.type"].AsString())
	for k, v := range a {
		assert.NotContains(t, v.Emit(), "123456789012", k)
	}
	assert.Empty(t, sp.Events())
	_, usage := a["gen_ai.usage.input_tokens"]
	assert.False(t, usage, "no answer, no usage")
}

// TestSpanErrorType: what ended a failed call, as error.type names it.
func TestSpanErrorType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&bedrock.APIError{Code: "ThrottlingException"}, "ThrottlingException"},
		{context.DeadlineExceeded, "deadline_exceeded"},
		{context.Canceled, "canceled"},
		{bedrock.ErrTransport, metrics.UpstreamTransport},
		{io.ErrUnexpectedEOF, "_OTHER"},
	} {
		assert.Equal(t, tt.want, spanErrorType(tt.err), tt.err.Error())
	}
	assert.False(t, strings.Contains(spanErrorType(&bedrock.APIError{Code: "X", Message: "secret"}), "secret"))
}
