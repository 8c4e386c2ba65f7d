// Package core is the gateway's chat core. It admits a call, resolves its model,
// translates it, calls Bedrock, and returns the answer, or a stream of events, with a
// Result that says what the call did. Transports (the Nirmata REST API, gRPC, OpenAI's
// API) are thin adapters around it: they decode their wire into a chat.Request, call the
// Service, and encode what it returns; errors they answer by the one classification,
// fault.Classify, each mapping its Kinds to its own statuses (docs/PROTOCOL.md 5).
// Nothing here knows a transport's wire, and nothing a call needs travels in its context
// (the core puts only the request's budget for the shared store there itself, for the
// store to read).
package core

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/quota"
	"github.com/nirmata/llm-gateway/internal/reasoning"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/telemetry"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
	"github.com/nirmata/llm-gateway/internal/toolguard"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Options configures a Service.
type Options struct {
	DefaultModel string
	// Aliases maps model names clients send to their targets, in the order calls try
	// them, failing over from one to the next (docs/PROTOCOL.md 14.4); an alias of one
	// model id has one target.
	Aliases map[string][]route.Target
	// Regions are the upstreams of the regions targets name, by region name. A target
	// without a region goes to the upstream New is given; so does one whose region is
	// missing here, which New logs as an error.
	Regions map[string]route.Upstream
	// DefaultMaxTokens is the maxTokens of a request that sets none, capped at the
	// model's maximum output where it is known (docs/PROTOCOL.md 14.5); 0 sends none.
	DefaultMaxTokens int
	// Affinity bounds the memory of which target answered each conversation.
	Affinity route.AffinityOptions
	// Shared, when set, shares the reasoning cache (11.4) and affinity between replicas
	// (docs/PROTOCOL.md 14.3); nil keeps them in this process.
	Shared store.Values
	// Limits of one request: beyond them it is refused with an invalid-request error.
	MaxTools, MaxMessages, MaxMessageBytes int
	// UpstreamTimeout bounds one Bedrock call, a whole stream included.
	UpstreamTimeout time.Duration
	// MaxConcurrent bounds the Bedrock calls in flight; beyond it, fault.ErrOverloaded.
	MaxConcurrent int
	// Metrics records what happens; nil records nothing.
	Metrics *metrics.Metrics
	// NoParallelToolCalls makes parallel_tool_calls false the default of a request that
	// does not set it (the zero value keeps parallel calls on).
	NoParallelToolCalls bool
	// ReasoningCache bounds the reasoning cache (docs/PROTOCOL.md 11.4); MaxEntries 0
	// keeps nothing.
	ReasoningCache reasoning.Options
	// NoPromptCaching turns the automatic prompt-cache points off (prompt_caching: off;
	// the zero value is auto).
	NoPromptCaching bool
	// AliasDefaults holds the defaults of the aliases that have some, by alias name.
	AliasDefaults map[string]AliasDefaults
	// ToolValidation is the tool_validation of a request that sets none and whose alias
	// has none: off, report or repair (docs/PROTOCOL.md 13.2); "" is report.
	ToolValidation string
	// MaxRepairAttempts bounds the model calls a repair adds to one answer; 0 makes none,
	// and invalid calls in repair mode go back with their violations.
	MaxRepairAttempts int
	// SchemaLimits bound each JSON Schema a request carries (a tool's parameters, its
	// response_format schema; beyond them it is refused) and what compiling them may cost
	// one request (docs/PROTOCOL.md 13.2). Zero fields take toolcheck.DefaultLimits'.
	SchemaLimits toolcheck.Limits
	// Tracing makes the spans of docs/PROTOCOL.md 14.6; nil makes none.
	Tracing *telemetry.Tracing
	// Region is the AWS region of the gateway's own Bedrock upstream, for the spans'
	// cloud.region of targets without a region of their own.
	Region string
	// KeyDefaults holds the defaults of the configured keys that have some, by the
	// identity the keyring gives their calls (chat.Request.KeyID; docs/PROTOCOL.md 14.1).
	KeyDefaults map[string]Defaults
	// Quota admits requests against their keys' limits; nil admits every request.
	Quota *quota.Keeper
	// StoreTimeout is the time one request may wait for the shared store (Shared and the
	// quota's counters), all its calls together (redis_timeout: store.WithBudget); 0 sets
	// no such bound.
	StoreTimeout time.Duration
	// Now is the clock of the warnings' rate limits; nil is time.Now.
	Now func() time.Time
}

// Service answers chat calls. It is safe for concurrent use.
type Service struct {
	opts Options
	log  *zap.Logger
	// slots holds one token per Bedrock call in flight: the concurrency cap, and what a
	// drain waits on.
	slots    chan struct{}
	draining atomic.Bool
	// router finds where each request goes: its model, or its alias's targets.
	router *route.Router
	// models is what the gateway lists as its models; see Models.
	models []ModelEntry
	// reasoning keeps Claude's reasoning blocks for clients that drop them.
	reasoning *reasoning.Cache
	// guard checks the answers' tool calls, and repairs them.
	guard   *toolguard.Guard
	started time.Time
	now     func() time.Time
}

// New returns a Service calling upstream, the Bedrock client of the gateway's own
// region, and opts.Regions for targets in others.
func New(upstream route.Upstream, opts Options, log *zap.Logger) *Service {
	s := &Service{opts: opts, log: log, slots: make(chan struct{}, opts.MaxConcurrent)}
	s.router = route.New(route.Options{Upstream: upstream, Aliases: opts.Aliases, Regions: opts.Regions,
		Affinity: opts.Affinity, Shared: opts.Shared}, log)
	for _, name := range s.router.Aliases() {
		s.models = append(s.models, ModelEntry{Name: name, ID: s.router.Resolve(name)})
	}
	s.started = time.Now()
	if s.now = opts.Now; s.now == nil {
		s.now = time.Now
	}
	s.reasoning = reasoning.New(opts.ReasoningCache, opts.Shared)
	s.guard = toolguard.New(toolguard.Options{Mode: opts.ToolValidation, MaxRepairAttempts: opts.MaxRepairAttempts,
		SchemaLimits: opts.SchemaLimits, Now: s.now}, log)
	if !s.router.IsAlias(opts.DefaultModel) && opts.DefaultModel != "" {
		s.models = append(s.models, ModelEntry{Name: opts.DefaultModel, ID: opts.DefaultModel})
	}
	// The default and the alias targets get their metric series from the start.
	opts.Metrics.ConfiguredModels(append([]string{s.resolveModel("")}, s.router.Targets()...)...)
	return s
}

// Metrics is the Service's metrics, for the transports to record their calls in.
func (s *Service) Metrics() *metrics.Metrics { return s.opts.Metrics }

// admit reserves a slot for one Bedrock call. Call release when the call has ended.
// Draining is checked again once the slot is held, so Drain, which waits for the slots to
// empty, cannot miss a call that was being admitted as it began.
func (s *Service) admit() (release func(), err error) {
	if s.draining.Load() {
		s.opts.Metrics.Rejected(metrics.RejectDraining)
		return nil, fault.ErrDraining
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.opts.Metrics.Rejected(metrics.RejectOverloaded)
		return nil, fault.ErrOverloaded
	}
	if s.draining.Load() {
		<-s.slots
		s.opts.Metrics.Rejected(metrics.RejectDraining)
		return nil, fault.ErrDraining
	}
	done := s.opts.Metrics.Inflight()
	return func() { done(); <-s.slots }, nil
}

// Drain refuses new calls from now on, and waits until the calls in flight have ended or
// ctx ends. It reports whether they all ended.
func (s *Service) Drain(ctx context.Context) bool {
	s.draining.Store(true)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(s.slots) > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// Draining reports whether Drain was called.
func (s *Service) Draining() bool { return s.draining.Load() }

// Bounds on the free strings of a request that reach logs, labels or Bedrock.
const (
	// maxModelIDBytes is the longest modelId Converse accepts.
	maxModelIDBytes = 2048
	// maxClientTypeBytes bounds the caller label.
	maxClientTypeBytes = 256
)

// prepared is a request translated for its current target and ready for Bedrock. Not
// safe for concurrent use.
type prepared struct {
	// req is the request with the alias's and the gateway's defaults applied; opts and
	// mode are what they say for its translation and its tool calls' check.
	req  *chat.Request
	opts translate.Options
	mode toolguard.Mode
	// budget is what compiling the schemas of the calls that come back may cost.
	budget *toolcheck.Budget
	// route is where the request may go, and which target it is at.
	route route.Route

	// What the translation for the current target made.
	model    capabilities.Model
	converse *bedrock.ConverseRequest
	names    *translate.Names
	// keyID is the calling key's identity, which the reasoning cache is partitioned by.
	keyID string
	// quota is the request's standing against its key's limits; nil without limits. Every
	// path that ends a prepared request settles it.
	quota *quota.Admission
	// check checks the answer's tool calls, and says what it did; nil when nothing is
	// checked.
	check *toolguard.Check
}

// up is the upstream of the current target.
func (p *prepared) up() route.Upstream { return p.route.Upstream() }

// prepare checks what only the gateway knows (provider, limits, model), finds where the
// request may go, translates it for the first target, and admits it against its key's
// limits, reserving its estimated tokens (quota). It fills res as it learns.
func (s *Service) prepare(ctx context.Context, req *chat.Request, res *Result) (*prepared, error) {
	if n := len(req.ClientType); n > maxClientTypeBytes {
		return nil, refuse("client_type: %d bytes, at most %d are allowed", n, maxClientTypeBytes)
	}
	res.ClientType = req.ClientType
	if err := checkModelID(req.Model); err != nil {
		return nil, err
	}
	res.RequestModel = req.Model
	if p := req.Provider; p != "" && !strings.EqualFold(p, "bedrock") {
		return nil, fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue, "provider %s is not supported; this gateway serves \"bedrock\"", clip.Quote(p))
	}
	if err := s.checkLimits(req); err != nil {
		return nil, err
	}
	name := s.modelName(req.Model)
	opts, v, err := s.applyDefaults(req, name)
	if err != nil {
		return nil, err
	}
	opts.DefaultMaxTokens = int32(s.opts.DefaultMaxTokens)
	res.Model = s.resolveModel(name) // the first target's, for the log line of a refusal
	p := &prepared{req: req, opts: opts, mode: v, budget: s.guard.Budget(),
		keyID: req.KeyID, route: s.router.Route(ctx, req, name)}
	res.Model = p.route.ModelID()
	if err := s.translate(ctx, p, res); err != nil {
		return nil, err
	}
	if p.quota, err = s.admitKey(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// translate translates p's request for its current target, with the reasoning the cache
// holds for that model, and records in res what the translation did. On an error p and
// res keep what they had.
func (s *Service) translate(ctx context.Context, p *prepared, res *Result) error {
	model := capabilities.Lookup(p.route.ModelID())
	opts := p.opts
	opts.OtherModel = p.route.OtherModel()
	req, restored := p.req, false
	if !opts.OtherModel && translate.AsksThinking(req, opts.ReasoningEffort) {
		req, restored = s.reasoning.Restore(ctx, req, model.ID)
	}
	converse, names, err := translate.RequestWith(req, model, opts)
	if err != nil {
		return err
	}
	res.Model = model.ID
	res.Repairs = names.Stats
	res.Ignored = append(slices.Clip(req.Ignored), names.Ignored...)
	res.Ignored = res.Ignored[:min(len(res.Ignored), MaxIgnored)] // a client controls how many
	res.BudgetExhausted = names.BudgetExhausted
	res.Thinking = names.Thinking
	if restored && names.ThinkingOn {
		res.Thinking = chat.ThinkingRestored
	}
	// No call comes back from a model offered no tools, nor from one whose tool budget is
	// spent (its calls are dropped).
	p.check, res.StrictUnenforced = s.guard.Check(req, model, p.mode, converse.ToolConfig != nil && !names.BudgetExhausted, names, p.budget)
	res.Validating = p.check != nil
	p.model, p.converse, p.names = model, converse, names
	return nil
}

// admitKey admits p's request against its key's limits (quota), with its estimates: its
// input, and the maxTokens of its translation for the first target.
func (s *Service) admitKey(ctx context.Context, p *prepared) (*quota.Admission, error) {
	if !s.opts.Quota.Limited(p.keyID) {
		return nil, nil
	}
	var maxTokens *int32
	if c := p.converse.InferenceConfig; c != nil {
		maxTokens = c.MaxTokens
	}
	return s.opts.Quota.Admit(ctx, p.keyID, quota.InputEstimate(p.req), quota.OutputEstimate(maxTokens, int(p.model.MaxOutput)))
}

// remember stores an answer's reasoning blocks under its tool calls when the client will
// need them back: Claude with thinking on (docs/PROTOCOL.md 11.4).
func (s *Service) remember(ctx context.Context, p *prepared, ids []string, blocks []chat.ReasoningBlock) {
	if p.names.ThinkingOn {
		s.reasoning.Store(ctx, p.keyID, p.model.ID, ids, blocks)
	}
}

// checkModelID refuses a model id longer than Bedrock accepts before it reaches a log, a
// label or Bedrock.
func checkModelID(model string) error {
	if n := len(model); n > maxModelIDBytes {
		return refuse("model: %d bytes, at most %d are allowed (Bedrock's limit for a model id)", n, maxModelIDBytes)
	}
	return nil
}

func (s *Service) checkLimits(req *chat.Request) error {
	if n := len(req.Tools); n > s.opts.MaxTools {
		return refuse("tools: %d tools given, at most %d are allowed", n, s.opts.MaxTools)
	}
	if n := len(req.Messages); n > s.opts.MaxMessages {
		return refuse("messages: %d messages given, at most %d are allowed", n, s.opts.MaxMessages)
	}
	for i := range req.Messages {
		if n := messageBytes(&req.Messages[i]); n > s.opts.MaxMessageBytes {
			return refuse("messages[%d]: %d bytes, at most %d are allowed", i, n, s.opts.MaxMessageBytes)
		}
	}
	return s.guard.Admit(req)
}

// refuse is an invalid request naming the field its message starts with.
func refuse(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, format, args...)
}

// messageBytes is the size of what one message carries.
func messageBytes(m *chat.Message) int {
	n := len(m.Content) + len(m.ToolCallID)
	for _, p := range m.Parts {
		n += len(p.Text)
		if p.Image != nil {
			n += len(p.Image.URL)
		}
		if p.File != nil {
			n += len(p.File.Data) + len(p.File.Filename) + len(p.File.FileID)
		}
	}
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return n
}

// logUnknownStop notes a stop reason the table does not know (answered as "stop").
func (s *Service) logUnknownStop(requestID, stopReason string) {
	if !translate.KnownStopReason(stopReason) {
		s.log.Warn("unknown Bedrock stop reason, answered as stop",
			zap.String("request_id", requestID), zap.String("stop_reason", clip.String(stopReason, clip.QuoteMax)))
	}
}

// upstreamFailed logs and counts a failed Bedrock call by Bedrock's error code. Bedrock's
// request id is what AWS support asks for.
func (s *Service) upstreamFailed(ctx context.Context, requestID, model string, err error) {
	if ctx.Err() != nil {
		return // the client left, the deadline passed or the drain ended it: not Bedrock's doing
	}
	code := upstreamCode(err)
	if code == "" {
		return
	}
	s.opts.Metrics.UpstreamError(model, code)
	var apiErr *bedrock.APIError
	if errors.As(err, &apiErr) {
		s.log.Warn("bedrock error", zap.String("request_id", requestID), zap.String("model", clip.String(model, clip.LogMax)),
			zap.String("error_code", apiErr.Code), zap.String("bedrock_request_id", apiErr.RequestID))
	} // a transport error's detail is in the answer's log line
}

// upstreamCode names a failed Bedrock call for the metrics and spans: Bedrock's error code,
// transport, truncated (the stream ended early) or invalid_answer; "" for other errors.
func upstreamCode(err error) string {
	var apiErr *bedrock.APIError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.Code
	case errors.Is(err, bedrock.ErrTransport):
		return metrics.UpstreamTransport
	case errors.Is(err, stream.ErrTruncated):
		return "truncated"
	case errors.Is(err, fault.ErrUpstream):
		return "invalid_answer"
	}
	return ""
}

// modelName is the model a request names: its own, else the default.
func (s *Service) modelName(name string) string {
	if name == "" {
		return s.opts.DefaultModel
	}
	return name
}

// resolveModel applies the default and the configured aliases: an alias's first target.
func (s *Service) resolveModel(name string) string {
	name = s.modelName(name)
	return s.router.Resolve(name)
}

// Chat answers one request with one complete answer. The Result is filled as far as the
// call got, errors included.
func (s *Service) Chat(ctx context.Context, req *chat.Request) (*chat.Response, Result, error) {
	start := time.Now()
	ctx = store.WithBudget(ctx, s.opts.StoreTimeout)
	var res Result
	p, err := s.prepare(ctx, req, &res)
	if err != nil {
		return nil, res, err
	}
	defer p.quota.Settle(ctx)
	resp, err := s.converse(ctx, req.ID, p, &res)
	if err != nil {
		return nil, res, err
	}
	res.Usage, res.ToolCalls, res.DroppedToolCalls = resp.Usage, len(resp.ToolCalls), resp.DroppedToolCalls
	res.FormatInvalid = p.names.JSONObject && !translate.OneJSONObject(resp.Text)
	p.checked(&res)
	resp.ToolValidation = res.ToolValidation
	resp.Model = p.model.ID
	resp.LatencyMs = time.Since(start).Milliseconds()
	resp.RequestID = req.ID
	resp.Ignored = res.Ignored
	resp.Thinking = res.Thinking
	return resp, res, nil
}

// converse makes one admitted Converse call, failing over between the request's targets,
// translates its answer and checks its tool calls, repairing them where their mode says
// so (repair.go).
func (s *Service) converse(ctx context.Context, requestID string, p *prepared, res *Result) (*chat.Response, error) {
	release, err := s.admit()
	if err != nil {
		return nil, err
	}
	defer release()
	callCtx, cancel := context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	defer cancel()
	var resp *chat.Response
	var turn bedrock.Message
	err = s.tryTargets(callCtx, requestID, p, res, func(ctx context.Context) (err error) {
		resp, turn, err = s.call(ctx, requestID, p, p.converse)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.router.Answered(ctx, &p.route)
	return s.settle(ctx, requestID, p, resp, turn)
}

// settle checks (and repairs) the tool calls of resp, the answer to p whose assistant
// message was turn, and keeps its reasoning blocks for the client's next turn.
func (s *Service) settle(ctx context.Context, requestID string, p *prepared, resp *chat.Response, turn bedrock.Message) (*chat.Response, error) {
	resp, err := p.check.Review(ctx, resp, turn, p.converse, repairs{s, requestID, p})
	if err != nil {
		return nil, err
	}
	if len(resp.Reasoning) > 0 && len(resp.ToolCalls) > 0 {
		ids := make([]string, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			ids[i] = tc.ID
		}
		s.remember(ctx, p, ids, resp.Reasoning)
	}
	return resp, nil
}

// repairs makes the repair attempts of p's tool guard: model calls on p's current target,
// each admitted against the key's limits and bounded by upstream_timeout.
type repairs struct {
	s         *Service
	requestID string
	p         *prepared
}

func (r repairs) Allowed(ctx context.Context) bool { return r.p.quota.RepairAllowed(ctx) }

func (r repairs) Call(ctx context.Context, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, r.s.opts.UpstreamTimeout)
	defer cancel()
	return r.s.call(ctx, r.requestID, r.p, req)
}

// checked puts what the check of p's answer did into res, whose ToolCalls are set: with
// no check, every call is unchecked.
func (p *prepared) checked(res *Result) {
	if c := p.check; c != nil {
		res.ToolValidation, res.ToolOutcomes, res.RepairAttempts = c.Outcome, c.Outcomes, c.Attempts
	} else {
		res.ToolOutcomes = toolguard.Outcomes{Unchecked: res.ToolCalls}
	}
}

// call makes one Converse call of req, p.converse or a repair attempt's request, on p's
// current target: through Converse, or through ConverseStream for requests Converse does
// not serve. Nothing of it reaches the client before it returns. It has a span of its
// own, and counts its tokens against the key's limits: its usage, or, when it was cut
// short after it reached Bedrock (the client left, a timeout), the request's estimate.
func (s *Service) call(ctx context.Context, requestID string, p *prepared, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	ctx, span := s.traceUpstream(ctx, p, req)
	var (
		resp *chat.Response
		turn bedrock.Message
		err  error
	)
	if p.names.StreamOnly {
		resp, turn, err = s.converseStreamed(ctx, requestID, p, req)
	} else {
		resp, turn, err = s.converseUnary(ctx, requestID, p, req)
	}
	if err != nil && ctx.Err() != nil {
		p.quota.CutShort(0) // the client left, or a deadline passed, while Bedrock worked on it
	}
	span.endAnswer(resp, err)
	return resp, turn, err
}

func (s *Service) converseUnary(ctx context.Context, requestID string, p *prepared, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	answer, err := p.up().Converse(ctx, p.model.ID, req)
	if err != nil {
		s.upstreamFailed(ctx, requestID, p.model.ID, err)
		return nil, bedrock.Message{}, blame(p.names, err)
	}
	p.quota.Count(translate.Usage(answer.Usage)) // used, whether its answer is usable or not
	s.logUnknownStop(requestID, answer.StopReason)
	resp, err := translate.Response(answer, p.names)
	if err != nil {
		return nil, bedrock.Message{}, err
	}
	return resp, *answer.Output.Message, nil
}

// converseStreamed answers a unary request through ConverseStream, for requests Converse
// does not serve (thinking with maxTokens above 21,333: docs/BEDROCK.md G12). The
// assistant message is recorded only when a repair may need it.
func (s *Service) converseStreamed(ctx context.Context, requestID string, p *prepared, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	events, err := p.up().ConverseStream(ctx, p.model.ID, req)
	if err != nil {
		s.upstreamFailed(ctx, requestID, p.model.ID, err)
		return nil, bedrock.Message{}, blame(p.names, err)
	}
	defer events.Close()
	var src stream.Events = events
	var rec *stream.Recorder
	if p.check.CanRepair() {
		rec = stream.NewRecorder(events)
		src = rec
	}
	m := stream.NewMachine(p.names)
	var out []chat.Event
	for err == nil {
		out, err = m.Step(src, out)
	}
	p.quota.Count(m.Usage()) // Bedrock's final event carries it: zeros without
	if err != io.EOF {
		p.quota.CutShort(0) // it reached Bedrock
		s.upstreamFailed(ctx, requestID, p.model.ID, err)
		return nil, bedrock.Message{}, err
	}
	s.logUnknownStop(requestID, m.StopReason())
	var turn bedrock.Message
	if rec != nil {
		turn = rec.Turn()
	}
	return stream.Collect(out, m), turn, nil
}

// ModelEntry is a model the gateway offers by name.
type ModelEntry struct {
	// Name is what a client sends: an alias, or the default model's id.
	Name string
	// ID is the Bedrock model id the name resolves to.
	ID string
}

// Models lists the configured aliases by name, then the default model unless it is an
// alias.
func (s *Service) Models() []ModelEntry { return s.models }

// Model returns the listed model of that name.
func (s *Service) Model(name string) (ModelEntry, error) {
	for _, m := range s.models {
		if m.Name == name {
			return m, nil
		}
	}
	return ModelEntry{}, fault.ErrModelNotFound
}

// Started is when the Service was made: the "created" time of the models it lists.
func (s *Service) Started() time.Time { return s.started }

// DefaultModel is the model name of a request that names none.
func (s *Service) DefaultModel() string { return s.opts.DefaultModel }

// Capabilities is what the gateway and one model support (docs/PROTOCOL.md 4).
type Capabilities struct {
	// Model is the model the top-level flags describe.
	Model          string
	ToolsSupported bool
	// ToolTypes are the tool types the model takes: ["function"], or [] without tools.
	ToolTypes      []string
	StreamingTools bool
	// ToolChoice lists the client tool_choice values the model takes: auto, required,
	// function, none.
	ToolChoice   []string
	MaxTools     int
	DefaultModel string
	// Surfaces are the APIs the gateway serves.
	Surfaces []string
	Models   []ModelCapabilities
	// ModelFlags are Model's flags when a model was asked about; nil without one.
	ModelFlags *Flags
}

// Surfaces are the APIs every gateway serves: the Nirmata REST API, OpenAI's Chat
// Completions API, and gRPC.
var Surfaces = []string{"nirmata", "openai", "grpc"}

// ModelCapabilities describes one listed model.
type ModelCapabilities struct {
	ID             string
	Tools          bool
	StreamingTools bool
	// ToolChoice lists Bedrock's toolChoice kinds: auto, any, tool.
	ToolChoice []string
	Flags
}

// Flags are what a model supports beyond tools (docs/PROTOCOL.md 4, from docs/BEDROCK.md
// F.2): unverified counts as false, except Images and Documents, which Bedrock decides.
type Flags struct {
	Reasoning, PromptCaching, StrictTools, StructuredOutput, Images, Documents bool
}

func flagsOf(m capabilities.Model) Flags {
	return Flags{
		Reasoning: m.Reasoning != "", PromptCaching: m.CacheMinTokens > 0,
		StrictTools: translate.NativeStrict(m), StructuredOutput: m.StructuredOutput,
		Images: m.Images, Documents: m.Documents,
	}
}

// Client-facing tool_choice values; Bedrock's kinds map onto them.
var clientChoiceOf = map[string]string{
	capabilities.ChoiceAuto: "auto",
	capabilities.ChoiceAny:  "required",
	capabilities.ChoiceTool: "function",
}

// Capabilities describes the gateway, and model (or the default model) in the top-level
// flags. "none" is always offered: the gateway implements it by not sending tools.
func (s *Service) Capabilities(model string) (*Capabilities, error) {
	if err := checkModelID(model); err != nil {
		return nil, err
	}
	m := capabilities.Lookup(s.resolveModel(model))
	out := &Capabilities{
		Model:          m.ID,
		ToolsSupported: m.Tools,
		ToolTypes:      []string{},
		StreamingTools: m.Tools && m.StreamingTools,
		ToolChoice:     []string{},
		MaxTools:       s.opts.MaxTools,
		DefaultModel:   s.opts.DefaultModel,
		Surfaces:       Surfaces,
	}
	if model != "" {
		f := flagsOf(m)
		out.ModelFlags = &f
	}
	if m.Tools {
		out.ToolTypes = append(out.ToolTypes, "function")
		for _, kind := range []string{capabilities.ChoiceAuto, capabilities.ChoiceAny, capabilities.ChoiceTool} {
			if m.SupportsChoice(kind) {
				out.ToolChoice = append(out.ToolChoice, clientChoiceOf[kind])
			}
		}
		out.ToolChoice = append(out.ToolChoice, "none")
	}
	seen := map[string]bool{}
	for _, id := range append([]string{s.opts.DefaultModel, m.ID}, s.router.Targets()...) {
		if seen[id] {
			continue
		}
		seen[id] = true
		mc := capabilities.Lookup(id)
		out.Models = append(out.Models, ModelCapabilities{
			ID: id, Tools: mc.Tools, StreamingTools: mc.Tools && mc.StreamingTools, ToolChoice: slices.Clone(mc.ToolChoice),
			Flags: flagsOf(mc),
		})
	}
	return out, nil
}
