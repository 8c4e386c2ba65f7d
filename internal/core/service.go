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
	"maps"
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
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/telemetry"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Upstream is the part of Bedrock the core calls, in one region. *bedrock.Client
// implements it.
type Upstream interface {
	Converse(ctx context.Context, modelID string, req *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error)
	ConverseStream(ctx context.Context, modelID string, req *bedrock.ConverseRequest) (*bedrock.EventStream, error)
}

// Options configures a Service.
type Options struct {
	DefaultModel string
	// Aliases maps model names clients send to their targets, in the order calls try
	// them, failing over from one to the next (docs/PROTOCOL.md 14.4); an alias of one
	// model id has one target.
	Aliases map[string][]Target
	// Regions are the upstreams of the regions targets name, by region name. A target
	// without a region goes to the upstream New is given; so does one whose region is
	// missing here, which New logs as an error.
	Regions map[string]Upstream
	// DefaultMaxTokens is the maxTokens of a request that sets none, capped at the
	// model's maximum output where it is known (docs/PROTOCOL.md 14.5); 0 sends none.
	DefaultMaxTokens int
	// Affinity bounds the memory of which target answered each conversation.
	Affinity AffinityOptions
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
	ReasoningCache ReasoningCacheOptions
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
	// Keys holds the policy of the configured keys that have limits or defaults, by the
	// identity the keyring gives their calls (chat.Request.KeyID; docs/PROTOCOL.md 14.1).
	Keys map[string]KeyPolicy
	// Counters counts the keys' use against their limits; nil counts in this process.
	Counters store.Counters
	// StoreTimeout is the time one request may wait for Shared and Counters, all its
	// calls together (redis_timeout: store.WithBudget); 0 sets no such bound.
	StoreTimeout time.Duration
	// CacheReadWeight is what a prompt-cache read token counts against a key's token
	// limits (docs/PROTOCOL.md 14.2).
	CacheReadWeight float64
	// Now is the clock of the limits' windows; nil is time.Now.
	Now func() time.Time
}

// Service answers chat calls. It is safe for concurrent use.
type Service struct {
	upstream Upstream
	opts     Options
	log      *zap.Logger
	access   *zap.Logger // see Observe
	// slots holds one token per Bedrock call in flight: the concurrency cap, and what a
	// drain waits on.
	slots    chan struct{}
	draining atomic.Bool
	// aliases are the configured aliases by name, their targets ready for calls.
	aliases map[string]*alias
	// affinity remembers the target that answered each conversation of an alias.
	affinity *affinity
	// aliasTargets are the configured aliases' model ids, sorted, without repeats.
	aliasTargets []string
	// models is what the gateway lists as its models; see Models.
	models []ModelEntry
	// reasoning keeps Claude's reasoning blocks for clients that drop them.
	reasoning *reasoningCache
	// schemas keeps the compiled schemas of the tools whose calls were checked.
	schemas *toolcheck.Cache
	// warnings are those about calls not checked, each rate-limited on its own.
	warnings uncheckedWarnings
	started  time.Time
	now      func() time.Time
	// keys are Options.Keys, each policy in one place, so a request holds a pointer.
	keys map[string]*KeyPolicy
}

// New returns a Service calling upstream, the Bedrock client of the gateway's own
// region, and opts.Regions for targets in others.
func New(upstream Upstream, opts Options, log *zap.Logger) *Service {
	s := &Service{upstream: upstream, opts: opts, log: log, slots: make(chan struct{}, opts.MaxConcurrent),
		// Access lines go without the caller: it would name the same line every time, and
		// finding it walks the stack on every request.
		access: log.WithOptions(zap.WithCaller(false))}
	s.aliases = make(map[string]*alias, len(opts.Aliases))
	for _, name := range slices.Sorted(maps.Keys(opts.Aliases)) {
		a := &alias{name: name}
		for _, t := range opts.Aliases[name] {
			up := upstream
			if t.Region != "" {
				if r, ok := opts.Regions[t.Region]; ok {
					up = r
				} else {
					log.Error("no upstream for a target's region: its calls go to the gateway's own region",
						zap.String("alias", name), zap.String("region", t.Region))
				}
			}
			a.targets = append(a.targets, newTarget(t, up))
			s.aliasTargets = append(s.aliasTargets, t.ModelID)
		}
		if len(a.targets) == 0 {
			continue
		}
		s.aliases[name] = a
		s.models = append(s.models, ModelEntry{Name: name, ID: a.targets[0].ModelID})
	}
	slices.Sort(s.aliasTargets)
	s.aliasTargets = slices.Compact(s.aliasTargets)
	s.affinity = newAffinity(opts.Affinity, opts.Shared)
	s.started = time.Now()
	if s.now = opts.Now; s.now == nil {
		s.now = time.Now
	}
	if s.opts.Counters == nil {
		s.opts.Counters = store.NewMemory(s.now)
	}
	for _, id := range slices.Sorted(maps.Keys(opts.Keys)) {
		k := opts.Keys[id]
		if s.keys == nil {
			s.keys = make(map[string]*KeyPolicy, len(opts.Keys))
		}
		s.keys[id] = &k
		for _, l := range k.limits() {
			opts.Metrics.KeyLimit(id, l.name) // a series from the start
		}
	}
	s.reasoning = newReasoningCache(opts.ReasoningCache, opts.Shared)
	s.schemas = toolcheck.NewCache(0, 0, opts.SchemaLimits)
	s.warnings = newUncheckedWarnings(s.now)
	if _, isAlias := s.aliases[opts.DefaultModel]; !isAlias && opts.DefaultModel != "" {
		s.models = append(s.models, ModelEntry{Name: opts.DefaultModel, ID: opts.DefaultModel})
	}
	// The default and the alias targets get their metric series from the start.
	opts.Metrics.ConfiguredModels(append([]string{s.resolveModel("")}, s.aliasTargets...)...)
	return s
}

// Metrics is the Service's metrics, for the transports to record their calls in.
func (s *Service) Metrics() *metrics.Metrics { return s.opts.Metrics }

// Result is what one call did, for the transport's access log and metrics. Model and
// ClientType are set once the request was read, the rest once the answer is complete.
type Result struct {
	// Model is the Bedrock model id the call went to: the target that answered, or the
	// last one tried (docs/PROTOCOL.md 14.4).
	Model string
	// RequestModel is the model name the request gave, "" when it gave none; at most
	// 2,048 bytes.
	RequestModel string
	ClientType   string
	Usage        chat.Usage
	// ToolCalls is how many tool calls the answer holds.
	ToolCalls int
	// Repairs is what the translator repaired in the client's history.
	Repairs translate.Stats
	// Ignored lists the JSON paths of request fields accepted without effect: the
	// transport's, then the translator's (docs/PROTOCOL.md 10.1).
	Ignored []string
	// DroppedToolCalls counts the tool calls left out of the answer: all but the first
	// when parallel tool calls are off, all when the tool budget is spent.
	DroppedToolCalls int
	// BudgetExhausted: the request's max_tool_rounds were spent (docs/PROTOCOL.md 13.5).
	// Set once the request is translated, so before any byte of the answer.
	BudgetExhausted bool
	// Thinking is what happened to extended thinking (a chat.Thinking outcome, ""
	// for nothing; docs/PROTOCOL.md 11.4). Set once the request is translated.
	Thinking string
	// FormatInvalid: the request asked for a json_object answer and the answer is not one
	// JSON object (docs/PROTOCOL.md 13.3); it was returned unchanged.
	FormatInvalid bool
	// Validating: the answer's tool calls are checked (docs/PROTOCOL.md 13.2), so a stream
	// holds each call until it is complete and checked, and its outcome comes as a
	// trailer. Set once the request is translated.
	Validating bool
	// ToolValidation is the answer's validation outcome: ValidationInvalid,
	// ValidationRepaired or "". Set once the answer is complete.
	ToolValidation string
	// ToolOutcomes counts the answer's tool calls by the outcome of their check.
	ToolOutcomes ToolOutcomes
	// RepairAttempts is how many model calls the repair of the answer's tool calls made.
	RepairAttempts int
	// StrictUnenforced: the model was offered strict tools it does not hold to their
	// schemas, and the operator's tool_validation off keeps the gateway from repairing
	// their calls (docs/PROTOCOL.md 13.1): x-gateway-strict: unenforced. Set once the
	// request is translated, so before any byte of the answer.
	StrictUnenforced bool
}

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
	// validation are what they say for its translation and its tool calls' check.
	req        *chat.Request
	opts       translate.Options
	validation validation
	// budget is what compiling the schemas of the calls that come back may cost.
	budget *toolcheck.Budget
	// route is where the request may go, and which target it is at.
	route route

	// What the translation for the current target made.
	model    capabilities.Model
	converse *bedrock.ConverseRequest
	names    *translate.Names
	// keyID is the calling key's identity, which the reasoning cache is partitioned by,
	// and key its policy (nil for a key without one).
	keyID string
	key   *KeyPolicy
	// quota is the request's standing against its key's limits; nil without limits. Every
	// path that ends a prepared request settles it.
	quota *quota
	// check checks the answer's tool calls; nil when nothing is checked.
	check *checker
	// validated is what the check of the answer did.
	validated validated
}

// up is the upstream of the current target.
func (p *prepared) up() Upstream { return p.route.target().up }

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
	p := &prepared{req: req, opts: opts, validation: v, budget: toolcheck.NewBudget(s.opts.SchemaLimits),
		keyID: req.KeyID, key: s.keys[req.KeyID], route: s.routeOf(ctx, req, name)}
	res.Model = p.route.target().ModelID
	if err := s.translate(ctx, p, res); err != nil {
		return nil, err
	}
	if p.quota, err = s.reserve(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// translate translates p's request for its current target, with the reasoning the cache
// holds for that model, and records in res what the translation did. On an error p and
// res keep what they had.
func (s *Service) translate(ctx context.Context, p *prepared, res *Result) error {
	model := capabilities.Lookup(p.route.target().ModelID)
	opts := p.opts
	opts.OtherModel = p.route.otherModel()
	req, restored := p.req, false
	if !opts.OtherModel && translate.AsksThinking(req, opts.ReasoningEffort) {
		req, restored = s.restoreReasoning(ctx, req, model.ID)
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
	p.check, res.StrictUnenforced = s.newChecker(req, model, p.validation, converse.ToolConfig != nil && !names.BudgetExhausted, names, p.budget)
	res.Validating = p.check != nil
	p.model, p.converse, p.names = model, converse, names
	return nil
}

// remember stores an answer's reasoning blocks under its tool calls when the client will
// need them back: Claude with thinking on (docs/PROTOCOL.md 11.4).
func (s *Service) remember(ctx context.Context, p *prepared, ids []string, blocks []chat.ReasoningBlock) {
	if p.names.ThinkingOn {
		s.reasoning.store(ctx, p.keyID, p.model.ID, ids, blocks)
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
	return s.checkSchemas(req)
}

// checkSchemas measures the JSON Schemas of a request (its tools' parameters, its
// response_format schema) before anything compiles or rewrites them: a schema beyond
// schema_limits is refused, naming its field. Every surface passes here, so no schema
// reaches the translator or the schema library unmeasured (docs/PROTOCOL.md 13.2). The
// schema cache remembers those it admitted, so a client's tools are measured once.
func (s *Service) checkSchemas(req *chat.Request) error {
	for i := range req.Tools {
		if p := req.Tools[i].Parameters; len(p) > 0 {
			if err := s.schemas.Admit(p); err != nil {
				return refuse("%s.parameters: %v", translate.ToolPath(i, &req.Tools[i]), err)
			}
		}
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type == chat.FormatJSONSchema && len(rf.Schema) > 0 {
		if err := s.schemas.Admit(rf.Schema); err != nil {
			return refuse("response_format.json_schema.schema: %v", err)
		}
	}
	return nil
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
	if a, ok := s.aliases[name]; ok {
		return a.targets[0].ModelID
	}
	return name
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
	defer p.quota.settle(ctx)
	resp, err := s.converse(ctx, req.ID, p, &res)
	if err != nil {
		return nil, res, err
	}
	res.Usage, res.ToolCalls, res.DroppedToolCalls = resp.Usage, len(resp.ToolCalls), resp.DroppedToolCalls
	res.FormatInvalid = p.names.JSONObject && !translate.OneJSONObject(resp.Text)
	p.validated.result(&res)
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
	s.answered(ctx, &p.route)
	return s.settle(ctx, requestID, p, resp, turn)
}

// settle checks (and repairs) the tool calls of resp, the answer to p whose assistant
// message was turn, and keeps its reasoning blocks for the client's next turn.
func (s *Service) settle(ctx context.Context, requestID string, p *prepared, resp *chat.Response, turn bedrock.Message) (*chat.Response, error) {
	resp, err := s.checkAnswer(ctx, requestID, p, resp, turn)
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

// attempt makes one Converse call of req, a repair attempt's request, on p's current
// target, bounded by upstream_timeout, and returns its answer and the assistant message
// Bedrock returned, which a repair sends back.
func (s *Service) attempt(ctx context.Context, requestID string, p *prepared, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	defer cancel()
	return s.call(ctx, requestID, p, req)
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
		p.quota.cutShort(0) // the client left, or a deadline passed, while Bedrock worked on it
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
	p.quota.count(translate.Usage(answer.Usage)) // used, whether its answer is usable or not
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
	if p.check != nil && p.check.canRepair {
		rec = stream.NewRecorder(events)
		src = rec
	}
	m := stream.NewMachine(p.names)
	var out []chat.Event
	for err == nil {
		out, err = m.Step(src, out)
	}
	p.quota.count(m.Usage()) // Bedrock's final event carries it: zeros without
	if err != io.EOF {
		p.quota.cutShort(0) // it reached Bedrock
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
	for _, id := range append([]string{s.opts.DefaultModel, m.ID}, s.aliasTargets...) {
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
