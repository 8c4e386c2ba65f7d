package core

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/pricing"
	"github.com/nirmata/llm-gateway/internal/quota"
	"github.com/nirmata/llm-gateway/internal/route"
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
	"github.com/nirmata/llm-gateway/internal/toolguard"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// The turn engine. Every call, unary or streamed, is one turn through the same steps:
//
//  1. admit (begin): the request's own bounds, its defaults, its key's limits (quota),
//     then a concurrency slot and the upstream deadline;
//  2. route and translate: the request goes to its model, or its alias's targets in order
//     (route), translated for each (translate);
//  3. call: Bedrock's answer, with failover between the targets (tryTargets) — Converse
//     for a unary answer (unary.go), ConverseStream for a stream (stream.go);
//  4. settle: the answer's tool calls checked and repaired (toolguard), its reasoning kept
//     (reasoning), its usage and cost counted against the key (quota, pricing), the
//     conversation's target remembered (route), and the turn ended (end): one Result says
//     what it did.
//
// Chat and Stream differ only in how step 3's answer is consumed: whole, or event by
// event as it arrives.

// Bounds on the free strings of a request that reach logs, labels or Bedrock.
const (
	// maxModelIDBytes is the longest modelId Converse accepts.
	maxModelIDBytes = 2048
	// maxClientTypeBytes bounds the caller label.
	maxClientTypeBytes = 256
)

// turn is one call through the engine. Not safe for concurrent use.
type turn struct {
	// id is the request's id, keyID its key's identity; start when the core got it.
	id, keyID string
	start     time.Time
	// ctx is the request's context with its store budget: the settling writes and the
	// repair attempts run under it. callCtx is ctx bounded by upstream_timeout: the
	// Bedrock call, a whole stream included, runs under it.
	ctx, callCtx context.Context
	cancel       context.CancelFunc
	// release gives back the concurrency slot; nil before it is held.
	release func()
	// res is what the turn did, filled as it goes.
	res Result

	// req is the request with the alias's and the gateway's defaults applied (nil once a
	// stream is open: only its translation is needed then); opts and mode are what they
	// say for its translation and its tool calls' check.
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
	plan     *translate.Plan
	// quota is the request's standing against its key's limits; nil without limits.
	quota *quota.Admission
	// check checks the answer's tool calls, and says what it did; nil when nothing is
	// checked.
	check *toolguard.Check
	// audit is the audit level of the call (Options.Audit).
	audit audit.Level
}

// begin admits req (step 1) and translates it for its first target (step 2). It checks
// what only the gateway knows (provider, limits, model), finds where the request may go,
// translates it, admits it against its key's limits, reserving its estimated tokens, then
// takes a concurrency slot and starts the upstream deadline. It always returns the turn,
// whose Result is filled as far as it got; on an error, what it took is given back. A
// turn begun is ended with end.
func (s *Service) begin(ctx context.Context, req *chat.Request) (*turn, error) {
	ctx = store.WithBudget(ctx, s.opts.StoreTimeout)
	t := &turn{id: req.ID, keyID: req.KeyID, start: time.Now(), ctx: ctx, req: req}
	err := s.prepare(t)
	if s.opts.Audit != nil {
		if t.audit = s.opts.Audit(req.KeyID); t.audit == audit.Full {
			t.res.Request = req
		}
	}
	if err != nil {
		return t, err
	}
	release, err := s.admit()
	if err != nil {
		t.quota.Settle(ctx)
		return t, err
	}
	t.release = release
	t.callCtx, t.cancel = context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	return t, nil
}

// end ends a turn begun: its usage replaces its reservations (quota), and its slot and
// deadline are given back. It is safe to call more than once.
func (t *turn) end() {
	t.quota.Settle(t.ctx)
	if t.release != nil {
		t.cancel()
		t.release()
		t.release = nil
	}
}

// prepare is begin's first part: the request's bounds, defaults, route, translation and
// key admission.
func (s *Service) prepare(t *turn) error {
	if err := s.resolve(t); err != nil {
		return err
	}
	if t.res.Repairs.ParallelDisabled {
		s.parallel.Learn(t.ctx, t.req)
	}
	var err error
	t.quota, err = s.admitKey(t)
	return err
}

// resolve checks t's request against its bounds, applies its defaults, finds its route
// and translates it for its first target.
func (s *Service) resolve(t *turn) error {
	req, res := t.req, &t.res
	*res = s.Named(req.Model) // what the log line of a refusal names
	if n := len(req.ClientType); n > maxClientTypeBytes {
		return refuse("client_type: %d bytes, at most %d are allowed", n, maxClientTypeBytes)
	}
	res.ClientType = req.ClientType
	if err := checkModelID(req.Model); err != nil {
		return err
	}
	if p := req.Provider; p != "" && !strings.EqualFold(p, "bedrock") {
		return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonUnsupportedValue, "provider %s is not supported; this gateway serves \"bedrock\"", clip.Quote(p))
	}
	name := s.modelName(req.Model)
	if err := s.checkModel(name); err != nil {
		return err
	}
	if err := s.checkLimits(req); err != nil {
		return err
	}
	opts, mode, err := s.applyDefaults(req, name)
	if err != nil {
		return err
	}
	opts.DefaultMaxTokens = int32(s.opts.DefaultMaxTokens)
	opts.FirstResultOnly = s.parallel.Knows(t.ctx, req)
	t.opts, t.mode, t.budget = opts, mode, s.guard.Budget()
	t.route = s.router.Route(t.ctx, req, name)
	res.Model = t.route.ModelID()
	return s.translate(t)
}

// translate translates t's request for its current target, with the reasoning the cache
// holds for that model, and records in its Result what the translation did. On an error
// the turn keeps what it had.
func (s *Service) translate(t *turn) error {
	model := capabilities.Lookup(t.route.ModelID())
	opts := t.opts
	opts.OtherModel = t.route.OtherModel()
	req, restored := t.req, false
	if !opts.OtherModel && translate.AsksThinking(req, opts.ReasoningEffort) {
		req, restored = s.reasoning.Restore(t.ctx, req, model.ID)
	}
	converse, plan, err := translate.RequestWith(req, model, opts)
	if err != nil {
		return err
	}
	res := &t.res
	res.Model, res.Region = model.ID, cmp.Or(t.route.Region(), s.opts.Region)
	res.Repairs = plan.Stats
	res.Ignored = append(slices.Clip(req.Ignored), plan.Ignored...)
	res.Ignored = res.Ignored[:min(len(res.Ignored), MaxIgnored)] // a client controls how many
	res.BudgetExhausted = plan.BudgetExhausted
	res.Thinking = plan.Thinking
	if restored && plan.ThinkingOn {
		res.Thinking = chat.ThinkingRestored
	}
	// No call comes back from a model offered no tools, nor from one whose tool budget is
	// spent (its calls are dropped).
	t.check, res.StrictUnenforced = s.guard.Check(req, model, t.mode, converse.ToolConfig != nil && !plan.BudgetExhausted, plan, t.budget)
	res.Validating = t.check != nil
	t.model, t.converse, t.plan = model, converse, plan
	return nil
}

// admitKey admits t's request against its key's limits (quota), with its estimates: its
// input, and the maxTokens of its translation for the first target.
func (s *Service) admitKey(t *turn) (*quota.Admission, error) {
	if !s.opts.Quota.Limited(t.req.KeyID) {
		return nil, nil
	}
	var maxTokens *int32
	if c := t.converse.InferenceConfig; c != nil {
		maxTokens = c.MaxTokens
	}
	return s.opts.Quota.Admit(t.ctx, t.req.KeyID, quota.InputEstimate(t.req), quota.OutputEstimate(maxTokens, int(t.model.MaxOutput)))
}

// checkModelID refuses a model id longer than Bedrock accepts before it reaches a log, a
// label or Bedrock.
// Named is what a Result says of a request naming model ("" for none) before anything
// else is known of it: the name, cut to the longest model id, and the model id it resolves
// to (the default model's, an alias's first target). A surface whose decoder refused the
// request records it as the call's Result, so that the access line and the metrics name
// the model all the same.
func (s *Service) Named(model string) Result {
	model = clip.String(model, maxModelIDBytes)
	return Result{Model: s.resolveModel(model), RequestModel: model}
}

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
			return messageTooLarge(i, &req.Messages[i], n, s.opts.MaxMessageBytes)
		}
	}
	return s.guard.Admit(req)
}

// messageTooLarge refuses message i, n bytes over limit, naming the field that is over the
// limit by itself, else the message with its largest field.
func messageTooLarge(i int, m *chat.Message, n, limit int) error {
	field, size := largestField(i, m)
	if size > limit {
		return refuse("%s: %d bytes, at most %d are allowed in one message (max_message_bytes)", field, size, limit)
	}
	return refuse("messages[%d]: %d bytes, at most %d are allowed (max_message_bytes); the largest field is %s (%d bytes)", i, n, limit, field, size)
}

// largestField is the JSON path and size of the largest of the fields messageBytes counts
// in message i.
func largestField(i int, m *chat.Message) (path string, size int) {
	field, part, call := ".content", -1, -1
	size = len(m.Content)
	pick := func(n, p, c int, f string) {
		if n > size {
			size, part, call, field = n, p, c, f
		}
	}
	pick(len(m.ToolCallID), -1, -1, ".tool_call_id")
	for j := range m.Parts {
		p := &m.Parts[j]
		pick(len(p.Text), j, -1, ".text")
		if p.Image != nil {
			pick(len(p.Image.URL), j, -1, ".image_url.url")
		}
		if f := p.File; f != nil {
			pick(len(f.Data), j, -1, ".file.file_data")
			pick(len(f.Filename), j, -1, ".file.filename")
			pick(len(f.FileID), j, -1, ".file.file_id")
		}
	}
	for j := range m.ToolCalls {
		c := &m.ToolCalls[j]
		pick(len(c.ID), -1, j, ".id")
		pick(len(c.Name), -1, j, ".function.name")
		pick(len(c.Arguments), -1, j, ".function.arguments")
	}
	path = "messages[" + strconv.Itoa(i) + "]"
	switch {
	case part >= 0:
		path += ".content[" + strconv.Itoa(part) + "]"
	case call >= 0:
		path += ".tool_calls[" + strconv.Itoa(call) + "]"
	}
	return path + field, size
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

// up is the upstream of the current target.
func (t *turn) up() route.Upstream { return t.route.Upstream() }

// used counts what one Bedrock call on t's current target used, whether its answer is
// usable or not: its cost at that model's price goes into the Result (the sum over every
// call the request makes: the failover attempt that answered, each repair attempt), and
// both go against the key's limits.
func (s *Service) used(t *turn, u chat.Usage) {
	p := s.price(t.model.ID)
	t.res.CostUSD += p.Cost(u)
	t.quota.Count(u, p)
}

// cutShort notes that a call on t's current target ended without Bedrock's usage after it
// reached Bedrock, having passed on written bytes of the answer: the key's limits count
// the request's input estimate and those bytes, at that model's price (quota.CutShort).
func (s *Service) cutShort(t *turn, written int) {
	if t.quota.Metered() {
		t.quota.CutShort(written, s.price(t.model.ID))
	}
}

// price is what model's tokens cost. A model without a price costs 0, which the log says
// once per model.
func (s *Service) price(model string) pricing.Price {
	p, ok := s.opts.Prices.Lookup(model)
	if !ok && s.opts.Prices.Missing(model) {
		s.log.Info("model has no price, so its calls cost 0; give it one under prices",
			zap.String("model", clip.String(model, clip.LogMax)))
	}
	return p
}

// settle is step 4 for a whole answer: it checks (and repairs) the tool calls of resp, the
// answer whose assistant message Bedrock returned as msg, keeps its reasoning blocks for
// the client's next turn, and records what the answer was in the Result.
func (s *Service) settle(t *turn, resp *chat.Response, msg bedrock.Message) (*chat.Response, error) {
	resp, err := t.check.Review(t.ctx, resp, msg, t.converse, repairs{s, t})
	if err != nil {
		return nil, err
	}
	if len(resp.Reasoning) > 0 && len(resp.ToolCalls) > 0 {
		ids := make([]string, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			ids[i] = tc.ID
		}
		s.remember(t, ids, resp.Reasoning)
	}
	t.res.Usage, t.res.ToolCalls, t.res.DroppedToolCalls = resp.Usage, len(resp.ToolCalls), resp.DroppedToolCalls
	t.checked()
	return resp, nil
}

// remember stores an answer's reasoning blocks under its tool calls when the client will
// need them back: Claude with thinking on (docs/PROTOCOL.md 11.4).
func (s *Service) remember(t *turn, ids []string, blocks []chat.ReasoningBlock) {
	if t.plan.ThinkingOn {
		s.reasoning.Store(t.ctx, t.keyID, t.model.ID, ids, blocks)
	}
}

// checked puts what the check of the answer did into the Result, whose ToolCalls are set:
// with no check, every call is unchecked.
func (t *turn) checked() {
	if c := t.check; c != nil {
		t.res.ToolValidation, t.res.ToolOutcomes, t.res.RepairAttempts = c.Outcome, c.Outcomes, c.Attempts
	} else {
		t.res.ToolOutcomes = toolguard.Outcomes{Unchecked: t.res.ToolCalls}
	}
}

// repairs makes the repair attempts of a turn's tool guard: model calls on the turn's
// current target, each admitted against the key's limits and bounded by upstream_timeout.
type repairs struct {
	s *Service
	t *turn
}

func (r repairs) Allowed(ctx context.Context) bool { return r.t.quota.RepairAllowed(ctx) }

func (r repairs) Call(ctx context.Context, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, r.s.opts.UpstreamTimeout)
	defer cancel()
	return r.s.call(ctx, r.t, req)
}
