// Package observe is where every call is observed, whatever its transport: its id, its
// server span, its access-log line and metrics, the classification of its failure, and
// the recovery of a panic while serving it (docs/PROTOCOL.md 14.6, 14.8). A transport
// begins a call in its one middleware or interceptor (Observer.Begin), and ends it there
// (Call.End); its handlers only record what the core did (Call.Result) and answer a
// failure in their own shape (Call.Fail).
package observe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/core"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/telemetry"
	"github.com/nirmata/llm-gateway/internal/toolguard"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Observer observes calls: it logs, counts and traces them. Safe for concurrent use.
type Observer struct {
	log *zap.Logger
	// access writes the access lines, without the caller: it would name the same line
	// every time, and finding it walks the stack on every request.
	access  *zap.Logger
	metrics *metrics.Metrics
	tracing *telemetry.Tracing
	// audit writes the calls' audit records; nil writes none.
	audit *audit.Writer
}

// New returns an Observer logging to log, counting in m, and tracing with t (nil makes
// no spans).
func New(log *zap.Logger, m *metrics.Metrics, t *telemetry.Tracing) *Observer {
	return &Observer{log: log, access: log.WithOptions(zap.WithCaller(false)), metrics: m, tracing: t}
}

// WithAudit makes o write each call's audit record with w (docs/PROTOCOL.md 17), at the
// level w gives its key. Call it before the first call begins.
func (o *Observer) WithAudit(w *audit.Writer) *Observer {
	o.audit = w
	return o
}

// Begin begins a call: its start, its id, and the labels of its metrics: transport
// (metrics.Transport*), route (metrics.Route*), and the method and path that name it in
// the log. It counts in gateway_inflight_requests until the transport's middleware or
// interceptor ends it with End, once.
func (o *Observer) Begin(transport, route, method, path string) *Call {
	return o.BeginAt(time.Now(), transport, route, method, path)
}

// BeginAt is Begin for a call that started at start, before it could be begun (a request
// head net/http answers itself).
func (o *Observer) BeginAt(start time.Time, transport, route, method, path string) *Call {
	o.metrics.Inflight(1)
	return &Call{o: o, Start: start, Transport: transport, Route: route, Method: method, Path: path,
		RequestID: NewRequestID(start), Code: "ok"}
}

// Call is one call as its transport saw it, for the access log and the metrics. The
// transport fills it as the call goes, and its middleware ends it (End). It is not safe
// for concurrent use.
type Call struct {
	o     *Observer
	Start time.Time
	// Transport is the metrics' transport label: "rest", "openai", "anthropic", "grpc"
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
	// UserAgent and SessionID are the client's User-Agent and session header, for the
	// audit record (bounded there).
	UserAgent, SessionID string
	// Status is the HTTP status of a REST answer (0 for gRPC); Code the snake-case gRPC
	// code of the outcome ("ok", "invalid_argument").
	Status int
	Code   string
	// Kind is the failure's kind when Code is not "ok".
	Kind fault.Kind
	// Reason is why the call failed, as its client was told: the message of its error
	// answer ("" while it has not failed). The access line carries it clipped
	// (ReasonMax).
	Reason string
	Result core.Result
	// span is the call's server span (Trace); nil when tracing is off.
	span trace.Span
}

// ReasonMax is how many bytes of a failure's message an access line's reason holds.
const ReasonMax = 200

// NewRequestID returns the id of a call that starts at start: 28 hex digits, the start's
// Unix milliseconds in 12 then 64 random bits. Ids sort by time, so the audit stores'
// indexes of them grow at one end, as their time indexes do, instead of writing a page
// anywhere in the index for each record. Two calls of the same millisecond, on any
// replica, get the same id with a chance of 2^-64 (n calls, about n²/2^65).
func NewRequestID(start time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(start.UnixMilli()))
	_, _ = rand.Read(b[8:])          // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[2:]) // the milliseconds' top 2 bytes are 0 until the year 10889
}

// Fail classifies err, the failure of the call, records its outcome in Code and logs the
// detail of a failure whose detail the client does not get. The transport answers the
// Failure in its own shape.
func (c *Call) Fail(ctx context.Context, err error) fault.Failure {
	f := c.o.Failed(ctx, c.RequestID, err)
	c.Answered(f)
	return f
}

// Answered records f, the failure the call was answered with, as its outcome: its Code
// and Reason.
func (c *Call) Answered(f fault.Failure) {
	c.Code, c.Reason, c.Kind = f.Kind.Code(), f.Message, f.Kind
}

// Failed classifies err, the failure of call requestID, and logs the detail of a failure
// whose detail the client does not get: Call.Fail, for work on another goroutine than
// the call's (a stream's relay), which reports the outcome back to it.
func (o *Observer) Failed(ctx context.Context, requestID string, err error) fault.Failure {
	f := fault.Classify(ctx, err)
	if f.Logged {
		o.log.Error("request failed", zap.String("request_id", requestID), zap.Error(err))
	}
	return f
}

// Recovered records p, a panic recovered while serving the call: its detail and stack go
// to the log ("panic serving " + what), the call's outcome is internal, and the client
// gets the returned Failure, which says nothing of it. Call it from the deferred function
// that recovered.
func (c *Call) Recovered(what string, p any) fault.Failure {
	f := c.o.panicked(c.RequestID, what, p, 3)
	c.Answered(f)
	return f
}

// Panicked is Call.Recovered for work on another goroutine than the call's.
func (o *Observer) Panicked(requestID, what string, p any) fault.Failure {
	return o.panicked(requestID, what, p, 3)
}

// panicked logs the panic with the stack of the function that recovered it, skip frames
// up.
func (o *Observer) panicked(requestID, what string, p any, skip int) fault.Failure {
	o.log.Error("panic serving "+what, zap.String("request_id", requestID), zap.Any("panic", p), zap.StackSkip("stack", skip))
	return fault.Failure{Kind: fault.KindInternal, Message: "internal error"}
}

// callKey holds a call in its context, for a transport whose handlers are reached through
// an interceptor (gRPC).
type callKey struct{}

// WithCall returns ctx holding call.
func WithCall(ctx context.Context, call *Call) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}

// CallOf is the call ctx holds (WithCall); nil when none.
func CallOf(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// End writes the call's access-log line, records it in the metrics and ends its span.
// Prompt text, arguments and keys are never logged: the key's identity is its name or a
// digest prefix, and a failure's reason is what the client was told.
func (c *Call) End() {
	o := c.o
	d := time.Since(c.Start)
	m := o.metrics
	m.Inflight(-1)
	m.Request(c.Transport, c.Route, c.Code, c.Result.Model, c.Result.ClientType, d)
	u := &c.Result.Usage
	m.Tokens(c.Result.Model, c.Result.ClientType, int(u.PromptTokens), int(u.CompletionTokens))
	m.CacheTokens(c.Result.Model, int(u.CacheReadTokens), int(u.CacheWriteTokens))
	m.Cost(c.KeyID, c.Result.Model, c.Result.CostUSD)
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
	m.ParamsDropped(c.Transport, c.Result.Ignored)
	m.Thinking(c.Result.Model, c.Result.Thinking)
	if c.Result.FormatInvalid {
		m.ResponseFormatInvalid(c.Result.Model)
		o.log.Info("answer is not one JSON object", zap.String("request_id", c.RequestID),
			zap.String("model", clip.String(c.Result.Model, clip.LogMax)), zap.String("response_format", "json_object"))
	}
	r := c.Result.Repairs
	if r.ParallelRemembered {
		m.ParallelDisabled(c.Result.Model, c.Result.ClientType)
		r.ParallelRemembered = false // the client's known habit, not a repair of its request
	}
	if cache := r.Cache; cache != (translate.CacheStats{}) {
		o.logCache(c.RequestID, c.Result.Model, cache)
		r.Cache = translate.CacheStats{} // prompt-cache points are not repairs
	}
	if r != (translate.Stats{}) {
		m.Repairs(c.Result.Model, r.SynthesizedResults, r.OrphanResults)
		if r.ParallelDisabled {
			m.ParallelDisabled(c.Result.Model, c.Result.ClientType)
		}
		o.logRepairs(c.RequestID, c.Result.Model, r)
	}
	msg := "http" // the access log's message for REST calls since the first release
	if c.Transport == metrics.TransportGRPC {
		msg = c.Transport
	}
	o.access.Info(msg, zap.Inline(c), zap.Float64("latency_ms", float64(d.Microseconds())/1000))
	if c.span != nil {
		c.endSpan()
	}
	if chatRoute := c.Route == metrics.RouteChat || c.Route == metrics.RouteChatStream; chatRoute && o.audit.Level(c.KeyID) != audit.Off {
		o.audit.Write(c.record(d), c.Result.Request, c.Result.Answer)
	}
}

// surfaceOf is the audit record's surface of each transport label.
var surfaceOf = map[string]string{metrics.TransportREST: "nirmata", metrics.TransportOpenAI: "openai",
	metrics.TransportAnthropic: "anthropic", metrics.TransportResponses: "responses", metrics.TransportGRPC: "grpc"}

// record is the call's audit record, without its content: every string a client sent
// bounded, no text, no arguments.
func (c *Call) record(d time.Duration) audit.Record {
	r, u := &c.Result, c.Result.Usage
	rec := audit.Record{Time: c.Start.UTC(), RequestID: c.RequestID, Key: c.KeyID, Surface: surfaceOf[c.Transport],
		UserAgent: clip.String(c.UserAgent, clip.LogMax), ClientType: r.ClientType, SessionID: clip.String(c.SessionID, clip.QuoteMax),
		Stream: c.Route == metrics.RouteChatStream, ModelRequested: clip.String(r.RequestModel, clip.LogMax), ModelServed: r.Model,
		Region: r.Region, Failovers: r.Failovers, Status: c.Status, Code: c.Code, FinishReason: string(r.FinishReason),
		InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens),
		CacheReadTokens: int64(u.CacheReadTokens), CacheWriteTokens: int64(u.CacheWriteTokens), CostUSD: pricing.Round(r.CostUSD),
		LatencyMs: float64(d.Microseconds()) / 1000, ToolValidation: r.ToolValidation, Repairs: r.RepairAttempts,
		BudgetExhausted: r.BudgetExhausted, DroppedToolCalls: r.DroppedToolCalls,
		ParallelDisabled: r.Repairs.ParallelDisabled || r.Repairs.ParallelRemembered}
	if c.Code != "ok" {
		rec.ErrorKind = c.Kind.String()
	}
	if a := r.Answer; a != nil {
		rec.ToolCalls = make([]audit.ToolCall, len(a.ToolCalls))
		for i, tc := range a.ToolCalls {
			rec.ToolCalls[i] = audit.ToolCall{Name: clip.String(tc.Name, clip.LogMax), ID: clip.String(tc.ID, clip.LogMax), Outcome: outcome(r, &tc)}
		}
	}
	return rec
}

// outcome is the check's outcome for tool call tc of a call that did r, in
// gateway_tool_calls_total's words: invalid when it went out with violations, repaired
// when a repair made the answer's calls valid, valid when it was checked, unchecked when
// not.
func outcome(r *core.Result, tc *chat.ToolCall) string {
	switch {
	case len(tc.ValidationErrors) > 0:
		return metrics.ToolInvalid
	case r.ToolValidation == toolguard.Repaired:
		return metrics.ToolRepaired
	case r.Validating:
		return metrics.ToolValid
	}
	return metrics.ToolUnchecked
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
	if c.Code != "ok" {
		enc.AddString("reason", clip.String(c.Reason, ReasonMax))
	}
	if c.Route == metrics.RouteChat || c.Route == metrics.RouteChatStream {
		enc.AddBool("stream", c.Route == metrics.RouteChatStream)
	}
	enc.AddString("model", clip.String(c.Result.Model, clip.LogMax))
	if m := c.Result.RequestModel; m != "" && m != c.Result.Model {
		enc.AddString("request_model", clip.String(m, clip.LogMax))
	}
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
	enc.AddFloat64("cost_usd", pricing.Round(c.Result.CostUSD))
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
func (o *Observer) logRepairs(requestID, model string, st translate.Stats) {
	o.log.Info("request repaired",
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
func (o *Observer) logCache(requestID, model string, st translate.CacheStats) {
	level := zapcore.DebugLevel
	if st.Changed() {
		level = zapcore.InfoLevel
	}
	if ce := o.log.Check(level, "prompt cache points"); ce != nil {
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
