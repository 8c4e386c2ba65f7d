package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Call is one call as its transport saw it, for the access log and the metrics. The
// transport fills it as the call goes and hands it to Observe when the call has ended. It
// is not safe for concurrent use.
type Call struct {
	Start time.Time
	// Transport is the metrics' transport label: "rest", "openai", "grpc"
	// (metrics.Transport*).
	Transport string
	// Route is the metrics' route label: "chat", "chat_stream", "capabilities", "models",
	// "other" (metrics.Route*).
	Route string
	// Method and Path name the call in the log: the HTTP method and path, or the gRPC
	// method. Both are bounded before they are logged.
	Method, Path string
	RequestID    string
	// KeyID is the caller's key identity: its name under keys, else the first 8 hex digits
	// of the key's SHA-256.
	KeyID string
	// Status is the HTTP status of a REST answer (0 for gRPC); Code the snake-case gRPC
	// code of the outcome ("ok", "invalid_argument").
	Status int
	Code   string
	Result Result
	// span is the call's server span (StartSpan); nil when tracing is off.
	span trace.Span
}

// NewRequestID returns a call's id: 16 random hex characters.
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Fail classifies err, the failure of call, records its outcome in call.Code and logs the
// detail of a failure whose detail the client does not get. The transport answers the
// Failure in its own shape.
func (s *Service) Fail(ctx context.Context, call *Call, err error) fault.Failure {
	f := fault.Classify(ctx, err)
	if f.Logged {
		s.log.Error("request failed", zap.String("request_id", call.RequestID), zap.Error(err))
	}
	call.Code = f.Kind.Code()
	return f
}

// Panicked records a panic a transport recovered from while serving call: its detail and
// stack go to the log ("panic serving " + what), the call's outcome is internal, and the
// client gets the returned Failure, which says nothing of it. Call it from the deferred
// function that recovered.
func (s *Service) Panicked(call *Call, what string, p any) fault.Failure {
	s.log.Error("panic serving "+what, zap.String("request_id", call.RequestID), zap.Any("panic", p), zap.StackSkip("stack", 2))
	call.Code = fault.KindInternal.Code()
	return fault.Failure{Kind: fault.KindInternal, Message: "internal error"}
}

// Observe writes the call's access-log line, records it in the metrics and ends its span.
// Prompt text, arguments and keys are never logged: the key's identity is its name or a
// digest prefix.
func (s *Service) Observe(c *Call) {
	d := time.Since(c.Start)
	m := s.opts.Metrics
	m.Request(c.Transport, c.Route, c.Code, c.Result.Model, c.Result.ClientType, d)
	u := &c.Result.Usage
	m.Tokens(c.Result.Model, c.Result.ClientType, int(u.PromptTokens), int(u.CompletionTokens))
	m.CacheTokens(c.Result.Model, int(u.CacheReadTokens), int(u.CacheWriteTokens))
	outcomes := c.Result.ToolOutcomes
	if n := c.Result.ToolCalls - outcomes.Total(); n > 0 {
		outcomes.Unchecked += n // calls no check saw
	}
	outcomes.Record(m, c.Result.Model, c.Result.ClientType)
	m.RepairAttempts(c.Result.Model, c.Result.RepairAttempts)
	reason := metrics.DropParallel
	if c.Result.BudgetExhausted {
		reason = metrics.DropBudget
	}
	m.ToolCallsDropped(c.Result.Model, reason, c.Result.DroppedToolCalls)
	m.Thinking(c.Result.Model, c.Result.Thinking)
	if c.Result.FormatInvalid {
		m.ResponseFormatInvalid(c.Result.Model)
		s.log.Info("answer is not one JSON object", zap.String("request_id", c.RequestID),
			zap.String("model", clip.String(c.Result.Model, clip.LogMax)), zap.String("response_format", "json_object"))
	}
	r := c.Result.Repairs
	if cache := r.Cache; cache != (translate.CacheStats{}) {
		s.logCache(c.RequestID, c.Result.Model, cache)
		r.Cache = translate.CacheStats{} // prompt-cache points are not repairs
	}
	if r != (translate.Stats{}) {
		m.Repairs(c.Result.Model, r.SynthesizedResults, r.OrphanResults)
		if r.ParallelDisabled {
			m.ParallelDisabled(c.Result.Model, c.Result.ClientType)
		}
		s.logRepairs(c.RequestID, c.Result.Model, r)
	}
	msg := "http" // the access log's message for REST calls since the first release
	if c.Transport == metrics.TransportGRPC {
		msg = c.Transport
	}
	s.access.Info(msg, zap.Inline(c), zap.Duration("latency", d))
	if c.span != nil {
		endSpan(c)
	}
}

// MarshalLogObject implements [zapcore.ObjectMarshaler].
func (c *Call) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("request_id", c.RequestID)
	enc.AddString("method", clip.String(c.Method, clip.QuoteMax))
	if c.Path != "" {
		enc.AddString("route", clip.String(c.Path, clip.LogMax))
	}
	if c.Status != 0 {
		enc.AddInt("status", c.Status)
	}
	enc.AddString("code", c.Code)
	enc.AddString("model", clip.String(c.Result.Model, clip.LogMax))
	enc.AddString("client_type", c.Result.ClientType)
	if c.KeyID != "" {
		enc.AddString("key_id", c.KeyID)
	}
	enc.AddInt32("input_tokens", c.Result.Usage.PromptTokens)
	enc.AddInt32("output_tokens", c.Result.Usage.CompletionTokens)
	if u := c.Result.Usage; u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 {
		enc.AddInt32("cache_read_tokens", u.CacheReadTokens)
		enc.AddInt32("cache_write_tokens", u.CacheWriteTokens)
	}
	enc.AddInt("tool_calls", c.Result.ToolCalls)
	if n := c.Result.DroppedToolCalls; n > 0 {
		enc.AddInt("dropped_tool_calls", n)
	}
	if c.Result.BudgetExhausted {
		enc.AddString("tool_budget", "exhausted")
	}
	if c.Result.Thinking != "" {
		enc.AddString("thinking", c.Result.Thinking)
	}
	if c.Result.ToolValidation != "" {
		enc.AddString("tool_validation", c.Result.ToolValidation)
	}
	if n := c.Result.RepairAttempts; n > 0 {
		enc.AddInt("repair_attempts", n)
	}
	return nil
}

// logRepairs records what the translator had to repair in a client's history, so a client
// that keeps sending broken histories shows up in the log. Counts only: no prompt text.
func (s *Service) logRepairs(requestID, model string, st translate.Stats) {
	s.log.Info("request repaired",
		zap.String("request_id", requestID),
		zap.String("model", clip.String(model, clip.LogMax)),
		zap.Int("synthesized_tool_results", st.SynthesizedResults),
		zap.Int("orphan_tool_results", st.OrphanResults),
		zap.Int("mapped_tool_names", st.MappedToolNames),
		zap.Int("mapped_tool_call_ids", st.MappedToolCallIDs),
		zap.Int("synthesized_tool_specs", st.SynthesizedToolSpecs),
		zap.String("tool_choice_fallback", st.ToolChoiceFallback),
		zap.Bool("dropped_top_p", st.DroppedTopP),
		zap.Int("partial_results", st.PartialResults),
		zap.Int("unsigned_reasoning_blocks", st.UnsignedReasoning),
		zap.Bool("parallel_calls_disabled", st.ParallelDisabled))
}

// logCache records what became of a request's prompt-cache points (docs/PROTOCOL.md 12):
// at info when normalisation dropped or changed one, which a client sending hints Bedrock
// would refuse shows, else at debug. Counts only: no path or text.
func (s *Service) logCache(requestID, model string, st translate.CacheStats) {
	level := zapcore.DebugLevel
	if st.Changed() {
		level = zapcore.InfoLevel
	}
	if ce := s.log.Check(level, "prompt cache points"); ce != nil {
		ce.Write(
			zap.String("request_id", requestID),
			zap.String("model", clip.String(model, clip.LogMax)),
			zap.Int("hints", st.Hints),
			zap.Int("automatic", st.Auto),
			zap.Int("misplaced", st.Misplaced),
			zap.Int("merged", st.Merged),
			zap.Int("unsupported", st.Unsupported),
			zap.Int("downgraded_ttl", st.Downgraded),
			zap.Int("over_limit", st.OverLimit),
			zap.Int("sent", st.Sent))
	}
}

// MaxIgnored bounds the names IgnoredValue lists.
const MaxIgnored = 32

// IgnoredValue is Result.Ignored as one header value: the comma-separated paths, at most
// MaxIgnored of them. A path holds what a client named its fields, so each byte outside
// printable ASCII, and each comma, is written as "_": the value stays one valid header
// line and one list.
func IgnoredValue(ignored []string) string {
	var b strings.Builder
	for i, name := range ignored[:min(len(ignored), MaxIgnored)] {
		if i > 0 {
			b.WriteByte(',')
		}
		for j := 0; j < len(name); j++ {
			c := name[j]
			if c < 0x20 || c >= 0x7f || c == ',' {
				c = '_'
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}
