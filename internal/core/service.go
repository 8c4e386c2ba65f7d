// Package core is the gateway's turn engine. Every call, unary or streamed, is one turn:
// admitted, routed, translated, called and settled in the same steps (turn.go), and
// answered whole (Chat) or event by event (Stream) with a Result that says what it did.
// The policies a turn applies are packages of their own, which the engine consumes:
// quota (the keys' limits), route (targets, failover, affinity), reasoning (the
// reasoning cache), toolguard (the tool calls' check, hold and repair), and the
// translator, which places the prompt-cache points (translate).
//
// Surfaces (the Nirmata REST API, OpenAI's API, gRPC) are thin adapters around it: they
// decode their wire into a chat.Request, call the Service, and encode what it returns;
// errors they answer by the one classification, fault.Classify, each mapping its Kinds to
// its own statuses (docs/PROTOCOL.md 5), and their calls are observed in one place
// (internal/observe). Nothing here knows a transport, and nothing a call needs travels in
// its context (the core puts only the request's budget for the shared store there itself,
// for the store to read). docs/SURFACES.md says what a surface consists of.
package core

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/parallel"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/quota"
	"github.com/nirmata/llm-gateway/internal/reasoning"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/store"
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
	// ParallelMemoryTTL is how long a client seen answering only the first of several
	// tool calls starts its conversations with parallel tool calls off (docs/PROTOCOL.md
	// 13.4); 0 remembers nothing.
	ParallelMemoryTTL time.Duration
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
	// Prices price the calls (docs/PROTOCOL.md 17.1); nil is the default prices.
	Prices *pricing.Table
	// StoreTimeout is the time one request may wait for the shared store (Shared and the
	// quota's counters), all its calls together (redis_timeout: store.WithBudget); 0 sets
	// no such bound.
	StoreTimeout time.Duration
	// Now is the clock of the warnings' rate limits; nil is time.Now.
	Now func() time.Time
	// Audit is the audit level of a key's calls (docs/PROTOCOL.md 17): from metadata up,
	// a call's Result keeps its answer (Result.Answer), for its tool calls' names and ids;
	// at full, its request too (Result.Request). nil audits no call.
	Audit func(keyID string) audit.Level
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
	// anthropic maps Anthropic's model names to their Bedrock ids in the gateway's region
	// (capabilities.AnthropicModels).
	anthropic map[string]string
	// models is what the gateway lists as its models; see Models.
	models []ModelEntry
	// reasoning keeps Claude's reasoning blocks for clients that drop them.
	reasoning *reasoning.Cache
	// parallel remembers the clients that answer only the first of several tool calls.
	parallel *parallel.Memory
	// guard checks the answers' tool calls, and repairs them.
	guard   *toolguard.Guard
	started time.Time
	now     func() time.Time
}

// New returns a Service calling upstream, the Bedrock client of the gateway's own
// region, and opts.Regions for targets in others.
func New(upstream route.Upstream, opts Options, log *zap.Logger) *Service {
	s := &Service{opts: opts, log: log, slots: make(chan struct{}, opts.MaxConcurrent),
		anthropic: capabilities.AnthropicModels(opts.Region)}
	s.router = route.New(route.Options{Upstream: upstream, Aliases: opts.Aliases, Regions: opts.Regions,
		Affinity: opts.Affinity, Shared: opts.Shared}, log)
	for _, name := range s.router.Aliases() {
		s.models = append(s.models, ModelEntry{Name: name, ID: s.router.Resolve(name)})
	}
	s.started = time.Now()
	if s.opts.Prices == nil {
		s.opts.Prices = pricing.New(nil)
	}
	if s.now = opts.Now; s.now == nil {
		s.now = time.Now
	}
	s.reasoning = reasoning.New(opts.ReasoningCache, opts.Shared)
	s.parallel = parallel.New(parallel.Options{TTL: opts.ParallelMemoryTTL, Shared: opts.Shared, Metrics: opts.Metrics, Now: s.now}, log)
	s.guard = toolguard.New(toolguard.Options{Mode: opts.ToolValidation, MaxRepairAttempts: opts.MaxRepairAttempts,
		SchemaLimits: opts.SchemaLimits, Now: s.now}, log)
	if !s.router.IsAlias(opts.DefaultModel) && opts.DefaultModel != "" {
		s.models = append(s.models, ModelEntry{Name: opts.DefaultModel, ID: s.modelName(opts.DefaultModel)})
	}
	// The series a dashboard needs exist from the start: the default model's and the alias
	// targets', and the failovers of the aliases that have somewhere to fail over to.
	var failover []string
	for name, targets := range opts.Aliases {
		if len(targets) > 1 {
			failover = append(failover, name)
		}
	}
	opts.Metrics.Configure(metrics.Configured{Models: append([]string{s.resolveModel("")}, s.router.Targets()...),
		FailoverAliases: failover, ErrorCodes: bedrock.Codes(), FailoverCodes: bedrock.FailoverCodes()})
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
	done := s.opts.Metrics.UpstreamCall()
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

// modelName is the model a request names: its own, else the default; a name of
// Anthropic's API that is no alias is the Bedrock id it stands for in the gateway's region
// (docs/BEDROCK.md L). Aliases win, then Anthropic's names, then Bedrock ids.
func (s *Service) modelName(name string) string {
	if name == "" {
		name = s.opts.DefaultModel
	}
	if id, ok := s.anthropic[name]; ok && !s.router.IsAlias(name) {
		return id
	}
	return name
}

// resolveModel applies the default and the configured aliases: an alias's first target.
func (s *Service) resolveModel(name string) string {
	name = s.modelName(name)
	return s.router.Resolve(name)
}

// Foundation is the foundation model a request naming model goes to first (its alias's
// first target): reasoning blocks are bound to it (docs/BEDROCK.md G9).
func (s *Service) Foundation(model string) string {
	return capabilities.Foundation(s.resolveModel(model))
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

// Model returns the listed model of that name, or the model an Anthropic API name stands
// for (docs/BEDROCK.md L), which every gateway serves without listing them.
func (s *Service) Model(name string) (ModelEntry, error) {
	for _, m := range s.models {
		if m.Name == name {
			return m, nil
		}
	}
	if id, ok := s.anthropic[name]; ok {
		return ModelEntry{Name: name, ID: id}, nil
	}
	return ModelEntry{}, s.unknownModel(name, "is not one this gateway lists", nil)
}

// Started is when the Service was made: the "created" time of the models it lists.
func (s *Service) Started() time.Time { return s.started }

// DefaultModel is the model name of a request that names none.
func (s *Service) DefaultModel() string { return s.opts.DefaultModel }

// Capabilities is what the gateway and one model support (docs/PROTOCOL.md 4): the one
// view of them every surface renders. Its JSON is the Nirmata REST surface's document;
// gRPC maps it field by field. A model outside the capability table (Known false) is
// described as supporting no tools: the gateway does not know that it does, though it
// still sends a request's tools and lets Bedrock decide.
type Capabilities struct {
	// Model is the model the top-level flags describe.
	Model          string `json:"-"`
	ToolsSupported bool   `json:"tools_supported"`
	// ToolTypes are the tool types the model takes: ["function"], or [] without tools.
	ToolTypes      []string `json:"tool_types"`
	StreamingTools bool     `json:"streaming_tools"`
	MaxTools       int      `json:"max_tools"`
	// StreamingFormats are the REST stream formats a probe may ask for.
	StreamingFormats []string `json:"streaming_formats"`
	// ToolChoice lists the client tool_choice values the model takes: auto, required,
	// function, none.
	ToolChoice []string `json:"tool_choice"`
	// Known: the capability table knows the model's family (docs/BEDROCK.md F).
	Known        bool   `json:"known"`
	DefaultModel string `json:"default_model"`
	// Surfaces are the APIs the gateway serves.
	Surfaces []string            `json:"surfaces"`
	Models   []ModelCapabilities `json:"models"`
	// Flags are Model's flags when a model was asked about; nil without one.
	*Flags `json:",inline"`
}

// Surfaces are the APIs every gateway serves: the Nirmata REST API, OpenAI's Chat
// Completions and Responses APIs, Anthropic's Messages API, and gRPC.
var Surfaces = []string{"nirmata", "openai", "anthropic", "responses", "grpc"}

// StreamingFormats are the stream formats of the Nirmata REST surface (docs/PROTOCOL.md
// 3.2, 3.3), which every surface's capabilities list.
var StreamingFormats = []string{"jsonl", "chunked"}

// ModelCapabilities describes one listed model.
type ModelCapabilities struct {
	ID string `json:"id"`
	// Known: the capability table knows the model's family.
	Known          bool `json:"known"`
	Tools          bool `json:"tools"`
	StreamingTools bool `json:"streaming_tools"`
	// ToolChoice lists Bedrock's toolChoice kinds: auto, any, tool.
	ToolChoice []string `json:"tool_choice"`
	Flags      `json:",inline"`
}

// Flags are what a model supports beyond tools (docs/PROTOCOL.md 4, from docs/BEDROCK.md
// F.2): unverified counts as false, except Images and Documents, which Bedrock decides.
type Flags struct {
	Reasoning        bool `json:"reasoning"`
	PromptCaching    bool `json:"prompt_caching"`
	StrictTools      bool `json:"strict_tools"`
	StructuredOutput bool `json:"structured_output"`
	Images           bool `json:"images"`
	Documents        bool `json:"documents"`
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
// flags. "none" is always offered: the gateway implements it by not sending tools. A model
// name that cannot reach a model is refused as a chat naming it is (checkModel).
func (s *Service) Capabilities(model string) (*Capabilities, error) {
	if err := checkModelID(model); err != nil {
		return nil, err
	}
	if err := s.checkModel(s.modelName(model)); err != nil {
		return nil, err
	}
	m := advertised(s.resolveModel(model))
	out := &Capabilities{
		Model:          m.ID,
		ToolsSupported: m.Tools,
		ToolTypes:      []string{},
		StreamingTools: m.StreamingTools,
		ToolChoice:     []string{},
		Known:          m.Known,
		MaxTools:       s.opts.MaxTools,
		DefaultModel:   s.opts.DefaultModel,
		Surfaces:       Surfaces,

		StreamingFormats: StreamingFormats,
	}
	if model != "" {
		f := flagsOf(m)
		out.Flags = &f
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
	for _, id := range append([]string{s.resolveModel(""), m.ID}, s.router.Targets()...) {
		if seen[id] {
			continue
		}
		seen[id] = true
		mc := advertised(id)
		out.Models = append(out.Models, ModelCapabilities{
			ID: id, Known: mc.Known, Tools: mc.Tools, StreamingTools: mc.StreamingTools, ToolChoice: slices.Clone(mc.ToolChoice),
			Flags: flagsOf(mc),
		})
	}
	return out, nil
}

// advertised is what the capabilities say of the model id: the table's row, with tools
// and streaming tools only where the table knows the model (capabilities.Lookup assumes
// them for a model it does not know, so that its calls keep their tools).
func advertised(id string) capabilities.Model {
	m := capabilities.Lookup(id)
	if !m.Known {
		m.Tools, m.ToolChoice = false, nil
	}
	m.StreamingTools = m.Tools && m.StreamingTools
	return m
}
