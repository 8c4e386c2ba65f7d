package metrics

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Transports, the values of the transport label: which surface a request came in on.
const (
	TransportREST      = "rest"      // the Nirmata REST API
	TransportOpenAI    = "openai"    // OpenAI's Chat Completions API
	TransportAnthropic = "anthropic" // Anthropic's Messages API
	TransportResponses = "responses" // OpenAI's Responses API
	TransportGRPC      = "grpc"
)

// Routes, the values of the route label: what a request asked for, on any transport.
const (
	RouteChat         = "chat"
	RouteChatStream   = "chat_stream"
	RouteCapabilities = "capabilities"
	RouteModels       = "models"
	RouteCountTokens  = "count_tokens"
	// RouteOther is any other path or method; it shares one series so a scan of random
	// paths cannot grow them.
	RouteOther = "other"
)

// Reasons a request is turned away before it reaches the gateway proper, the values of
// gateway_rejected_total's reason label.
const (
	RejectOverloaded      = "overloaded"
	RejectDraining        = "draining"
	RejectUnauthenticated = "unauthenticated"
	RejectTooLarge        = "too_large"
)

// Operations on the shared store (docs/PROTOCOL.md 14.3), the values of
// gateway_store_errors_total's op label.
const (
	StoreIncr   = "incr"   // a limit counter's increment
	StoreCounts = "counts" // reading limit counters
	StorePut    = "put"    // writing a value: a reasoning-cache entry, an affinity
	StoreGet    = "get"    // reading values
	StoreDelete = "delete" // deleting a value: a stored response
)

// The error_code values of an upstream failure that carries no Bedrock error code.
const (
	// UpstreamTransport: no answer, or an unreadable one (connection refused, reset, TLS,
	// a malformed response).
	UpstreamTransport = "transport"
	// UpstreamTruncated: a stream that ended before its messageStop.
	UpstreamTruncated = "truncated"
	// UpstreamInvalidAnswer: a 200 the gateway could not use.
	UpstreamInvalidAnswer = "invalid_answer"
)

// latencyBuckets spans a cached capabilities answer (5ms) to a long generation (120s).
var latencyBuckets = prometheus.ExponentialBucketsRange(0.005, 120, 16)

// Metrics records the gateway's metrics into its own registry. It is safe for concurrent
// use, and a nil *Metrics records nothing.
type Metrics struct {
	registry *prometheus.Registry

	models      *labelSet
	clientTypes *labelSet
	errorCodes  *labelSet
	params      *labelSet

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	firstEvent      *prometheus.HistogramVec
	upstreamErrors  *prometheus.CounterVec
	tokens          *prometheus.CounterVec
	cacheRead       *prometheus.CounterVec
	droppedCalls    *prometheus.CounterVec
	droppedParams   *prometheus.CounterVec
	auditWritten    prometheus.Counter
	auditDropped    *prometheus.CounterVec
	parallelOff     *prometheus.CounterVec
	parallelLearned prometheus.Counter
	thinkingOff     *prometheus.CounterVec
	thinkingBack    *prometheus.CounterVec
	formatInvalid   *prometheus.CounterVec
	cacheWrite      *prometheus.CounterVec
	toolCalls       *prometheus.CounterVec
	repairAttempts  *prometheus.CounterVec
	synthesized     *prometheus.CounterVec
	orphans         *prometheus.CounterVec
	openStreams     *prometheus.GaugeVec
	retries         *prometheus.CounterVec
	failovers       *prometheus.CounterVec
	inflight        prometheus.Gauge
	upstreamCalls   prometheus.Gauge
	rejected        *prometheus.CounterVec
	rateLimited     *prometheus.CounterVec
	cost            *prometheus.CounterVec
	storeErrors     *prometheus.CounterVec
	storeUp         prometheus.Gauge
}

// New returns a Metrics with a fresh registry holding the gateway_* metrics and the Go
// runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		registry:    prometheus.NewRegistry(),
		models:      newLabelSet(MaxModels, MaxModelLen),
		clientTypes: newLabelSet(MaxClientTypes, MaxClientTypeLen),
		errorCodes:  newLabelSet(MaxErrorCodes, MaxErrorCodeLen),
		params:      newLabelSet(MaxParams, MaxParamLen),

		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total",
			Help: `Requests answered, counted once each when its answer (or stream) ended: by transport ("rest" for the Nirmata API, "openai", "anthropic", "grpc"), route ("chat", "chat_stream", "capabilities", "models", "count_tokens", "other"), outcome as a snake-case gRPC code ("ok", "invalid_argument", "resource_exhausted"), model and client type. Requests refused before they were read (no key) count with model "none".`,
		}, []string{"transport", "route", "code", "model", "client_type"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer's last byte (for a stream, its last event), whatever the outcome.",
			Buckets: latencyBuckets,
		}, []string{"transport", "route", "model", "client_type"}),
		firstEvent: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_stream_first_event_seconds",
			Help:    "Time from a streamed request's arrival to its first event (what a client waits before the answer starts).",
			Buckets: latencyBuckets,
		}, []string{"model", "client_type"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_upstream_errors_total",
			Help: `Bedrock calls that failed after the SDK's retries, by Bedrock error code ("ThrottlingException"), "transport" (no answer or an unreadable one), "truncated" (a stream that ended before messageStop) or "invalid_answer" (a 200 the gateway could not use). A call the client or a deadline ended is not counted.`,
		}, []string{"model", "error_code"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tokens_total",
			Help: `Tokens of successful answers as Bedrock reported them, by direction: "input" (prompt tokens, prompt-cache reads and writes included) or "output".`,
		}, []string{"model", "client_type", "direction"}),
		cacheRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_cache_read_tokens_total",
			Help: "Prompt tokens of successful answers read from Bedrock's prompt cache (billed at about a tenth of input); part of gateway_tokens_total's input.",
		}, []string{"model"}),
		cacheWrite: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_cache_write_tokens_total",
			Help: "Prompt tokens of successful answers written to Bedrock's prompt cache; part of gateway_tokens_total's input.",
		}, []string{"model"}),
		droppedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tool_calls_dropped_total",
			Help: `Tool calls the model made that the gateway left out of the answer, by reason: "parallel" (all but the first when parallel tool calls are off) or "budget" (all, when the request's max_tool_rounds were spent).`,
		}, []string{"model", "reason"}),
		droppedParams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_params_dropped_total",
			Help: `Request fields accepted without effect (those x-gateway-ignored-params lists: a field the model does not take, an anthropic-beta value it does not take, a server tool, an unknown member), by transport and the field's path with its indexes as N ("tools.N.defer_loading", "anthropic-beta: <value>").`,
		}, []string{"transport", "param"}),
		auditWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_audit_written_total",
			Help: "Audit records written to the audit store (docs/PROTOCOL.md 17).",
		}),
		auditDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_audit_dropped_total",
			Help: "Audit records dropped, the call served all the same: queue_full (the store fell behind), store_error (the store refused or could not be reached), draining (the store had not taken them when the drain ended).",
		}, []string{"reason"}),
		parallelOff: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_parallel_calls_disabled_total",
			Help: "Requests whose parallel tool calls the gateway turned off because the client's history answered only some of several calls (the deployed gollm client answers only the first), or an earlier request of the same key and User-Agent did, and the request did not set parallel_tool_calls.",
		}, []string{"model", "client_type"}),
		parallelLearned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_parallel_calls_learned_total",
			Help: "Clients (a key with its User-Agent) this process learned answer only the first of several tool calls; their conversations start with parallel tool calls off for parallel_memory_ttl.",
		}),
		thinkingOff: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_thinking_disabled_total",
			Help: `Requests asking for extended thinking that the gateway sent without it, by reason: "missing-signature" (a tool turn without its signed reasoning blocks, not in the reasoning cache), "forced-tool-choice" or "prefill" (Claude refuses thinking with either), "failover" (answered by another foundation model than the one the conversation's reasoning is bound to).`,
		}, []string{"model", "reason"}),
		thinkingBack: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_reasoning_restored_total",
			Help: "Requests whose tool turn came without its reasoning blocks and got them back from the gateway's reasoning cache, so thinking stayed on.",
		}, []string{"model"}),
		formatInvalid: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_format_invalid_total",
			Help: `Answers to response_format "json_object" requests that are not one JSON object; they were returned unchanged.`,
		}, []string{"model"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tool_calls_total",
			Help: `Tool calls in answers returned to clients (a stream's counted once complete), by outcome of their schema check: "valid", "invalid" (returned with its violations by tool_validation report), "repaired" (returned by an answer the model corrected), "unrepaired" (still invalid when the repair attempts ran out), "unchecked" (tool_validation off, or a schema the gateway cannot compile).`,
		}, []string{"model", "client_type", "outcome"}),
		repairAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tool_repair_attempts_total",
			Help: "Model calls the gateway made to have the model correct tool calls whose arguments broke their schema (tool_validation repair, or a strict tool on a model without native strict tool use).",
		}, []string{"model"}),
		synthesized: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_synthesized_tool_results_total",
			Help: "Error tool results the gateway added for tool calls a client's history left unanswered (the gollm client answers only the first of parallel calls), so Bedrock accepts the history.",
		}, []string{"model"}),
		orphans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_orphan_tool_results_total",
			Help: "Tool results in a client's history that answered no tool call, sent to Bedrock as plain user text.",
		}, []string{"model"}),
		openStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_open_streams",
			Help: "Streamed answers whose Bedrock stream is open now.",
		}, []string{"client_type"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_upstream_retries_total",
			Help: "Bedrock calls the gateway sent again after a throttling or 5xx answer (the SDK's retry policy, before the first byte reached the client).",
		}, []string{"model"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_failovers_total",
			Help: `Calls to an alias that moved on to its next target before any byte of the answer reached the client, by alias and reason: the error code of the target that failed, once the SDK's retries were spent ("ThrottlingException", "ServiceQuotaExceededException", "ServiceUnavailableException", "ModelNotReadyException", "InternalServerException").`,
		}, []string{"alias", "reason"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_inflight_requests",
			Help: "Requests the gateway is serving now, on every surface and route (a stream until its last event); health checks and /metrics are not counted.",
		}),
		upstreamCalls: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_upstream_calls_in_flight",
			Help: "Chat calls holding one of max_concurrent's slots now: each makes one Bedrock call at a time, a stream's until it ends. At max_concurrent, new calls are refused with 503.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_rejected_total",
			Help: `Requests turned away before reaching Bedrock, by reason: "unauthenticated" (no valid key), "overloaded" (max_concurrent calls in flight, or too many keyless gRPC messages at once), "draining" (shutting down), "too_large" (a body over max_body_bytes, or a request line and headers over 64 KiB).`,
		}, []string{"reason"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_rate_limited_total",
			Help: `Requests refused because their key was over one of its limits, by key (its configured name, else the first 8 hex digits of its SHA-256) and limit ("requests_per_minute", "tokens_per_minute", "tokens_per_day", "usd_per_day", "usd_per_month").`,
		}, []string{"key", "limit"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_cost_usd_total",
			Help: `What the Bedrock calls cost in US dollars, at the prices of the price table (defaults and the prices setting; a model without a price costs 0), by key (its configured name, else the first 8 hex digits of its SHA-256; "none" without authentication) and model (the model that answered). A request's cost is added once it has ended, failover and repair attempts included.`,
		}, []string{"key", "model"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_store_errors_total",
			Help: `Calls made without the shared store (Redis, redis_url), by operation: "incr" and "counts" (limit counters), "put" and "get" (reasoning cache, failover affinity, stored responses), "delete" (stored responses). A call fails or runs out of its request's redis_timeout, or is not sent while the last ping failed or once that time is spent. Meanwhile limits fail open and caches use their local copy. A call whose client left is not counted.`,
		}, []string{"op"}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_store_up",
			Help: "1 while the shared store answers its pings (always without redis_url), 0 when the last ping failed.",
		}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.requestDuration, m.firstEvent, m.upstreamErrors, m.tokens,
		m.cacheRead, m.cacheWrite, m.droppedCalls, m.droppedParams, m.auditWritten, m.auditDropped, m.parallelOff, m.parallelLearned, m.thinkingOff, m.thinkingBack, m.formatInvalid, m.toolCalls, m.repairAttempts, m.synthesized, m.orphans, m.openStreams, m.retries, m.failovers, m.inflight, m.upstreamCalls,
		m.rejected, m.rateLimited, m.cost, m.storeErrors, m.storeUp,
	)
	// Known reasons start at zero, so rate() and alerts see a series before the first
	// rejection rather than an absent one.
	for _, r := range []string{RejectOverloaded, RejectDraining, RejectUnauthenticated, RejectTooLarge} {
		m.rejected.WithLabelValues(r)
	}
	for _, op := range []string{StoreIncr, StoreCounts, StorePut, StoreGet, StoreDelete} {
		m.storeErrors.WithLabelValues(op)
	}
	m.storeUp.Set(1) // the in-process store; a Guard over Redis sets it from then on
	return m
}

// Configured is what the operator configured, and the error codes the upstream answers
// with: the label values whose series exist from the start (Metrics.Configure).
type Configured struct {
	// Models are the Bedrock model ids requests go to: the default model and the alias
	// targets.
	Models []string
	// FailoverAliases are the aliases of several targets, the ones that can fail over.
	FailoverAliases []string
	// ErrorCodes are Bedrock's error codes; FailoverCodes those of them that move a call
	// on to an alias's next target.
	ErrorCodes, FailoverCodes []string
}

// Configure gives the series a dashboard is built from their zero values from the start,
// so a query or an alert finds them before the first event: for each configured model,
// its successful chat requests on each transport (client type "none"), tokens, prompt-cache
// tokens, retries and upstream errors by every error code (Bedrock's, and transport,
// truncated, invalid_answer); for each alias that can fail over, its failovers by every
// code that moves it on. The models and codes get their own series outside the caps, for
// the life of the process.
func (m *Metrics) Configure(c Configured) {
	if m == nil {
		return
	}
	codes := append([]string{UpstreamTransport, UpstreamTruncated, UpstreamInvalidAnswer}, c.ErrorCodes...)
	for _, code := range codes {
		m.errorCodes.reserve(code)
	}
	for _, id := range c.Models {
		m.models.reserve(id)
		model := m.models.lookup(id)
		for _, transport := range []string{TransportREST, TransportOpenAI, TransportAnthropic, TransportResponses, TransportGRPC} {
			for _, route := range []string{RouteChat, RouteChatStream} {
				m.requests.WithLabelValues(transport, route, "ok", model, LabelNone)
			}
		}
		for _, direction := range []string{"input", "output"} {
			m.tokens.WithLabelValues(model, LabelNone, direction)
		}
		m.cacheRead.WithLabelValues(model)
		m.cacheWrite.WithLabelValues(model)
		m.retries.WithLabelValues(model)
		for _, code := range codes {
			m.upstreamErrors.WithLabelValues(model, m.errorCodes.lookup(code))
		}
	}
	for _, alias := range c.FailoverAliases {
		for _, code := range c.FailoverCodes {
			m.failovers.WithLabelValues(fixed(alias), fixed(code))
		}
	}
}

// Handler serves the registry in the Prometheus exposition formats, for GET /metrics. A
// collector that fails does not fail the scrape: the rest is still served. On a nil
// Metrics it answers 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// Gatherer exposes the registry to readers such as prometheus/testutil, so tests in other
// packages can assert on what they recorded. It is nil on a nil Metrics.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	if m == nil {
		return nil
	}
	return m.registry
}

// Request records one finished request: it counts it in gateway_requests_total under
// code, the snake-case gRPC code name the client got ("ok", "invalid_argument"), and
// observes d, the total latency (to the end of the stream for streams), in
// gateway_request_duration_seconds. A model or client type gets a series of its own once a
// request with it succeeded (or, for a model, when configured): failed requests naming
// models or client types at random cannot use up the caps.
func (m *Metrics) Request(transport, route, code, model, clientType string, d time.Duration) {
	if m == nil {
		return
	}
	if code == "ok" {
		model, clientType = m.models.value(model), m.clientTypes.value(clientType)
	} else {
		model, clientType = m.models.lookup(model), m.clientTypes.lookup(clientType)
	}
	transport, route = fixed(transport), fixed(route)
	m.requests.WithLabelValues(transport, route, fixed(code), model, clientType).Inc()
	m.requestDuration.WithLabelValues(transport, route, model, clientType).Observe(d.Seconds())
}

// FirstEvent observes d, the time from the request's arrival to the first event written
// to a stream, in gateway_stream_first_event_seconds. The model answered, so it gets a
// series of its own.
func (m *Metrics) FirstEvent(model, clientType string, d time.Duration) {
	if m == nil {
		return
	}
	m.firstEvent.WithLabelValues(m.models.value(model), m.clientTypes.value(clientType)).Observe(d.Seconds())
}

// UpstreamError counts one failed Bedrock call in gateway_upstream_errors_total. code is
// Bedrock's error code ("ThrottlingException"), or [UpstreamTransport] when the failure
// carries none.
func (m *Metrics) UpstreamError(model, code string) {
	if m == nil {
		return
	}
	m.upstreamErrors.WithLabelValues(m.models.lookup(model), m.errorCodes.value(code)).Inc()
}

// Tokens adds a response's token usage to gateway_tokens_total: in under direction
// "input", out under "output". Counts of zero or less are skipped.
func (m *Metrics) Tokens(model, clientType string, in, out int) {
	if m == nil || (in <= 0 && out <= 0) {
		return
	}
	model, clientType = m.models.value(model), m.clientTypes.value(clientType)
	if in > 0 {
		m.tokens.WithLabelValues(model, clientType, "input").Add(float64(in))
	}
	if out > 0 {
		m.tokens.WithLabelValues(model, clientType, "output").Add(float64(out))
	}
}

// CacheTokens adds the prompt tokens an answer read from and wrote to the prompt cache to
// gateway_cache_read_tokens_total and gateway_cache_write_tokens_total. Zeros are skipped.
func (m *Metrics) CacheTokens(model string, read, write int) {
	if m == nil || (read <= 0 && write <= 0) {
		return
	}
	model = m.models.value(model)
	if read > 0 {
		m.cacheRead.WithLabelValues(model).Add(float64(read))
	}
	if write > 0 {
		m.cacheWrite.WithLabelValues(model).Add(float64(write))
	}
}

// Reasons tool calls are dropped, the values of gateway_tool_calls_dropped_total's reason.
const (
	DropParallel = "parallel" // all but the first when parallel tool calls are off
	DropBudget   = "budget"   // all when the request's tool budget is spent
)

// ParamsDropped counts the fields a call on transport accepted without effect (its
// Result's Ignored), each by its path with every index written N, so that the label counts
// fields, not positions.
func (m *Metrics) ParamsDropped(transport string, paths []string) {
	if m == nil {
		return
	}
	for _, p := range paths {
		m.droppedParams.WithLabelValues(transport, m.params.value(indexesAsN(p))).Inc()
	}
}

// Reasons an audit record is dropped: the reason label of gateway_audit_dropped_total.
const (
	AuditQueueFull  = "queue_full"
	AuditStoreError = "store_error"
	AuditDraining   = "draining"
)

// AuditWritten counts n audit records the store took.
func (m *Metrics) AuditWritten(n int) {
	if m != nil {
		m.auditWritten.Add(float64(n))
	}
}

// AuditDropped counts n audit records dropped for reason (Audit*).
func (m *Metrics) AuditDropped(reason string, n int) {
	if m != nil {
		m.auditDropped.WithLabelValues(reason).Add(float64(n))
	}
}

// indexesAsN is a field path with each index written N: "tools.N.defer_loading" of
// "tools.3.defer_loading", "messages[N].content" of "messages[2].content". An index is a
// segment of digits only, between ".", "[" and "]".
func indexesAsN(path string) string {
	var b strings.Builder
	start := 0
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '.' && path[i] != '[' && path[i] != ']' {
			continue
		}
		seg := path[start:i]
		if seg != "" && strings.Trim(seg, "0123456789") == "" {
			seg = "N"
		}
		b.WriteString(seg)
		if i < len(path) {
			b.WriteByte(path[i])
		}
		start = i + 1
	}
	return b.String()
}

// ToolCallsDropped adds n tool calls left out of an answer for reason. n of zero or less
// is skipped.
func (m *Metrics) ToolCallsDropped(model, reason string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.droppedCalls.WithLabelValues(m.models.value(model), reason).Add(float64(n))
}

// ParallelDisabled counts a request whose parallel tool calls the gateway turned off.
func (m *Metrics) ParallelDisabled(model, clientType string) {
	if m == nil {
		return
	}
	m.parallelOff.WithLabelValues(m.models.value(model), m.clientTypes.value(clientType)).Inc()
}

// ParallelLearned counts a client learned to answer only the first of several tool calls.
func (m *Metrics) ParallelLearned() {
	if m == nil {
		return
	}
	m.parallelLearned.Inc()
}

// Thinking records what happened to a request's extended thinking: outcome is a
// chat.Thinking outcome, "" for nothing.
func (m *Metrics) Thinking(model, outcome string) {
	if m == nil || outcome == "" {
		return
	}
	if reason, off := strings.CutPrefix(outcome, "disabled-"); off {
		m.thinkingOff.WithLabelValues(m.models.value(model), reason).Inc()
		return
	}
	m.thinkingBack.WithLabelValues(m.models.value(model)).Inc()
}

// ResponseFormatInvalid counts an answer to a json_object request that is not one JSON
// object in gateway_response_format_invalid_total.
func (m *Metrics) ResponseFormatInvalid(model string) {
	if m == nil {
		return
	}
	m.formatInvalid.WithLabelValues(m.models.value(model)).Inc()
}

// Outcomes of a tool call's schema check (docs/PROTOCOL.md 13.2), the values of
// gateway_tool_calls_total's outcome label.
const (
	ToolValid      = "valid"
	ToolInvalid    = "invalid"
	ToolRepaired   = "repaired"
	ToolUnrepaired = "unrepaired"
	ToolUnchecked  = "unchecked"
)

// ToolCalls adds n tool calls returned to a client with outcome (a Tool* constant) to
// gateway_tool_calls_total. n of zero or less is skipped.
func (m *Metrics) ToolCalls(model, clientType, outcome string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.toolCalls.WithLabelValues(m.models.value(model), m.clientTypes.value(clientType), fixed(outcome)).Add(float64(n))
}

// RepairAttempts adds n model calls made to repair tool calls to
// gateway_tool_repair_attempts_total. n of zero or less is skipped.
func (m *Metrics) RepairAttempts(model string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.repairAttempts.WithLabelValues(m.models.value(model)).Add(float64(n))
}

// Repairs records what the gateway fixed in a client's history before sending it to
// Bedrock: synthesized tool results for unanswered tool calls
// (gateway_synthesized_tool_results_total) and orphan tool results that answered none
// (gateway_orphan_tool_results_total). Counts of zero or less are skipped.
func (m *Metrics) Repairs(model string, synthesized, orphans int) {
	if m == nil || (synthesized <= 0 && orphans <= 0) {
		return
	}
	model = m.models.lookup(model)
	if synthesized > 0 {
		m.synthesized.WithLabelValues(model).Add(float64(synthesized))
	}
	if orphans > 0 {
		m.orphans.WithLabelValues(model).Add(float64(orphans))
	}
}

// StreamOpened counts a stream as open in gateway_open_streams until done is called. done
// may be called more than once; only the first call counts. Typical use:
//
//	defer m.StreamOpened(clientType)()
func (m *Metrics) StreamOpened(clientType string) (done func()) {
	if m == nil {
		return noop
	}
	return track(m.openStreams.WithLabelValues(m.clientTypes.value(clientType)))
}

// Retry counts one retried Bedrock call in gateway_upstream_retries_total.
func (m *Metrics) Retry(model string) {
	if m == nil {
		return
	}
	m.retries.WithLabelValues(m.models.lookup(model)).Inc()
}

// Failover counts, in gateway_failovers_total, a call to alias that moved on to its next
// target after the Bedrock error code reason. Both come from the configuration and
// Bedrock's fixed set of codes, so they need no cap.
func (m *Metrics) Failover(alias, reason string) {
	if m == nil {
		return
	}
	m.failovers.WithLabelValues(fixed(alias), fixed(reason)).Inc()
}

// Inflight adds delta to gateway_inflight_requests: 1 when a request begins, -1 when it
// ends. Without a done func to call, it allocates nothing on the path of every request.
func (m *Metrics) Inflight(delta int) {
	if m == nil {
		return
	}
	m.inflight.Add(float64(delta))
}

// UpstreamCall counts a chat call holding a max_concurrent slot in
// gateway_upstream_calls_in_flight until done is called. done may be called more than
// once; only the first call counts.
func (m *Metrics) UpstreamCall() (done func()) {
	if m == nil {
		return noop
	}
	return track(m.upstreamCalls)
}

// Rejected counts a request turned away in gateway_rejected_total. reason is one of the
// Reject* constants.
func (m *Metrics) Rejected(reason string) {
	if m == nil {
		return
	}
	m.rejected.WithLabelValues(fixed(reason)).Inc()
}

// KeyLimit gives a configured key's limit its gateway_rate_limited_total series at zero,
// so rate() and alerts see it before the first refusal.
func (m *Metrics) KeyLimit(key, limit string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(key, limit)
}

// RateLimited counts a request refused because its key was over limit. key is a
// configured key's identity: the configuration bounds the series.
func (m *Metrics) RateLimited(key, limit string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(key, limit).Inc()
}

// Cost adds usd, what a request of key on model cost, to gateway_cost_usd_total. key is
// the identity of a key the keyring accepted ("" without authentication): the
// configuration bounds the series. The model answered, so it gets a series of its own
// while the cap has room.
func (m *Metrics) Cost(key, model string, usd float64) {
	if m == nil || !(usd > 0) {
		return
	}
	m.cost.WithLabelValues(fixed(key), m.models.value(model)).Add(usd)
}

// StoreError counts a failed call to the shared store in gateway_store_errors_total. op
// is a Store* constant.
func (m *Metrics) StoreError(op string) {
	if m == nil {
		return
	}
	m.storeErrors.WithLabelValues(fixed(op)).Inc()
}

// StoreUp sets gateway_store_up: whether the shared store answers.
func (m *Metrics) StoreUp(up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.storeUp.Set(v)
}

func noop() {}

// track increments g and returns the matching decrement, which runs once however often it
// is called: a deferred done plus an early one on an error path must not drive the gauge
// negative.
func track(g prometheus.Gauge) func() {
	g.Inc()
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			g.Dec()
		}
	}
}
