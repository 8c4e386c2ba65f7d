// Package toolguard checks the tool calls of answers against their tools' schemas and
// repairs invalid ones in the same session (docs/PROTOCOL.md 13.2): it measures a
// request's schemas as it is admitted (Guard.Admit), decides each call's mode
// (Guard.Mode), checks an answer's calls and asks the model to correct them (Check), and
// holds a stream's calls while they are checked (Holder).
package toolguard

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/ratelog"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Tool validation (docs/PROTOCOL.md 13.2): every tool call an answer returns, once 13.4 and
// 13.5 have dropped what they drop, is checked against its tool's parameters, and so is
// the call of the synthetic answer tool (13.3), against the response_format schema. Each
// call has a mode: the request's tool_validation (its own, else its key's, else its
// alias's, else the gateway's; the operator's off cannot be raised), or repair for a strict
// tool on a model without native strict tool use (13.1) unless the operator turned
// validation off. An answer with an invalid call in repair mode is repaired (repair.go);
// other invalid calls are returned with their violations. The answer tool's call is not
// one the client sees: its violations are in the answer's outcome alone.
//
// Schemas are measured when the request is admitted (Guard.Admit); they are compiled
// when a call of theirs comes back, within the request's compile budget.

// Options configures a Guard.
type Options struct {
	// Mode is the tool_validation of a request that sets none and whose key and alias set
	// none: off, report or repair; "" is report.
	Mode string
	// MaxRepairAttempts bounds the model calls a repair adds to one answer; 0 makes none,
	// and invalid calls in repair mode go back with their violations.
	MaxRepairAttempts int
	// SchemaLimits bound each schema a request carries and what compiling them may cost
	// one request. Zero fields take toolcheck.DefaultLimits'.
	SchemaLimits toolcheck.Limits
	// Now is the clock of the warnings' rate limits; nil is time.Now.
	Now func() time.Time
}

// Guard checks tool calls for every request. Safe for concurrent use.
type Guard struct {
	opts Options
	log  *zap.Logger
	// schemas keeps the compiled schemas of the tools whose calls were checked.
	schemas *toolcheck.Cache
	// warnings are those about calls not checked, each rate-limited on its own.
	warnings uncheckedWarnings
}

// New returns a Guard.
func New(opts Options, log *zap.Logger) *Guard {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Guard{opts: opts, log: log, schemas: toolcheck.NewCache(0, 0, opts.SchemaLimits), warnings: newUncheckedWarnings(opts.Now)}
}

// Admit measures the JSON Schemas of a request (its tools' parameters, its response_format
// schema) before anything compiles or rewrites them: a schema beyond schema_limits is
// refused, naming its field. Every surface passes here, so no schema reaches the
// translator or the schema library unmeasured (docs/PROTOCOL.md 13.2). The schema cache
// remembers those it admitted, so a client's tools are measured once.
func (g *Guard) Admit(req *chat.Request) error {
	for i := range req.Tools {
		if p := req.Tools[i].Parameters; len(p) > 0 {
			if err := g.schemas.Admit(p); err != nil {
				return refuse("%s.parameters: %v", translate.ToolPath(i, &req.Tools[i]), err)
			}
		}
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type == chat.FormatJSONSchema && len(rf.Schema) > 0 {
		if err := g.schemas.Admit(rf.Schema); err != nil {
			return refuse("response_format.json_schema.schema: %v", err)
		}
	}
	return nil
}

// Budget is a new request's budget for compiling and checking schemas.
func (g *Guard) Budget() *toolcheck.Budget { return toolcheck.NewBudget(g.opts.SchemaLimits) }

// refuse is an invalid request naming the field its message starts with.
func refuse(format string, args ...any) error {
	return fault.Refuse(fault.ErrInvalidRequest, fault.ReasonInvalidValue, format, args...)
}

// Outcomes counts an answer's tool calls by the outcome of their check, the outcome
// label of gateway_tool_calls_total.
type Outcomes struct {
	Valid, Invalid, Repaired, Unrepaired, Unchecked int
}

// Total is the number of calls counted.
func (o Outcomes) Total() int {
	return o.Valid + o.Invalid + o.Repaired + o.Unrepaired + o.Unchecked
}

// Record adds the counts to m, by outcome.
func (o Outcomes) Record(m *metrics.Metrics, model, clientType string) {
	m.ToolCalls(model, clientType, metrics.ToolValid, o.Valid)
	m.ToolCalls(model, clientType, metrics.ToolInvalid, o.Invalid)
	m.ToolCalls(model, clientType, metrics.ToolRepaired, o.Repaired)
	m.ToolCalls(model, clientType, metrics.ToolUnrepaired, o.Unrepaired)
	m.ToolCalls(model, clientType, metrics.ToolUnchecked, o.Unchecked)
}

// StrictUnenforced is the x-gateway-strict value of an answer whose strict tools were
// neither held to their schemas by the model nor repaired (Guard.Check's unenforced).
const StrictUnenforced = "unenforced"

// Outcomes of an answer's validation: the x-gateway-tool-validation header, gRPC's
// metadata.tool_validation.
const (
	// Invalid: calls are returned with their violations.
	Invalid = "invalid"
	// Repaired: the model corrected its calls; they are all valid.
	Repaired = "repaired"
)

// Mode is how a request's tool calls are checked.
type Mode struct {
	// mode is off, report or repair.
	mode string
	// operatorOff: the operator turned validation off for the request, so it is off
	// whatever the request asks, and strict tools are not repaired either.
	operatorOff bool
}

// String is the mode's name: off, report or repair.
func (m Mode) String() string { return m.mode }

// Mode is a request's tool_validation. The operator's level is the most specific one set:
// operator, the key's default, else the alias's, else the gateway's (Options.Mode), else
// report. Off there is off (docs/PROTOCOL.md 13.1, 13.2): the operator
// turns checking off for the gateway, an alias or a key, and no request turns it back on.
// Otherwise the request's own value wins, so a request may ask for repair where the
// operator's default is report. A value that is none of the modes is refused, naming the
// field.
func (g *Guard) Mode(req *chat.Request, operator string) (Mode, error) {
	switch req.ToolValidation {
	case "", chat.ValidationOff, chat.ValidationReport, chat.ValidationRepair:
	default:
		return Mode{}, refuse("tool_validation %s is not one of \"off\", \"report\", \"repair\"", clip.Quote(req.ToolValidation))
	}
	operator = cmp.Or(operator, g.opts.Mode, chat.ValidationReport)
	if operator == chat.ValidationOff {
		return Mode{mode: chat.ValidationOff, operatorOff: true}, nil
	}
	return Mode{mode: cmp.Or(req.ToolValidation, operator)}, nil
}

// Check checks the tool calls of one request's answers, and records what it did. Not safe
// for concurrent use: it belongs to the request.
type Check struct {
	g    *Guard
	mode string // the request's tool_validation
	// tools are what the check needs of the request's tools: not their descriptions,
	// which a stream would otherwise hold for as long as it is open.
	tools []checkedTool
	// canRepair: some call may be repaired (mode repair, or a strict tool in strict).
	canRepair bool
	// answer is the response_format schema the answer tool's input is checked against;
	// nil when the request has no answer tool or mode is off.
	answer []byte
	// plan is the request's translation plan: its names and Bedrock's, for a repair's
	// request.
	plan                    *translate.Plan
	requestID, keyID, model string
	// budget is what the request may still spend compiling schemas the cache lacks.
	budget *toolcheck.Budget

	// Outcome is the answer's: Invalid, Repaired or "". Outcomes counts its calls by
	// the outcome of their check; Attempts is the repair attempts made.
	Outcome  string
	Outcomes Outcomes
	Attempts int
}

// checkedTool is one of a request's tools as its Check knows it: its name as the client
// gave it, its parameters' schema, and whether its calls are repaired whatever the mode
// says (a strict tool on a model without native strict tool use).
type checkedTool struct {
	name   string
	schema []byte
	strict bool
}

// CanRepair reports whether some call may be repaired, so an answer's turn must be kept
// for a repair to send back.
func (c *Check) CanRepair() bool { return c != nil && c.canRepair }

// Check is the check of a translated request for model, with its mode, plan and budget;
// nil when nothing is checked: no call
// can come back (the model is offered no tools of the client's, or its tool budget is
// spent) and there is no answer tool to check, or mode is off and no strict tool falls
// back to repair. unenforced reports strict tools offered to a model without native strict
// tool use that are not repaired either, as the operator turned validation off: their
// calls come without a guarantee, and the answer says so (x-gateway-strict).
func (g *Guard) Check(req *chat.Request, model capabilities.Model, v Mode, offered bool, plan *translate.Plan, budget *toolcheck.Budget) (c *Check, unenforced bool) {
	answer := plan.AnswerTool != "" && v.mode != chat.ValidationOff
	if !offered && !answer {
		return nil, false
	}
	c = &Check{g: g, mode: v.mode, plan: plan, requestID: req.ID, keyID: req.KeyID, model: model.ID, canRepair: v.mode == chat.ValidationRepair, budget: budget}
	if answer {
		c.answer = req.ResponseFormat.Schema
	}
	strict := false
	if offered {
		c.tools = make([]checkedTool, len(req.Tools))
		for i := range req.Tools {
			t := &req.Tools[i]
			c.tools[i] = checkedTool{name: t.Name, schema: t.Parameters}
			switch {
			case !translate.StrictRepair(t, model):
			case v.operatorOff:
				unenforced = true
			default:
				c.tools[i].strict, c.canRepair, strict = true, true, true
			}
		}
	}
	if v.mode == chat.ValidationOff && !strict {
		return nil, unenforced
	}
	return c, unenforced
}

// verdict is what the check of one call found.
type verdict struct {
	// violations of the call; nil when valid or unchecked.
	violations []string
	// unchecked: the call's mode is off, or its schema does not compile.
	unchecked bool
	// repair: the call's mode is repair, so a violation has the answer repaired.
	repair bool
}

// check checks one call.
func (c *Check) check(call *chat.ToolCall) verdict {
	i := slices.IndexFunc(c.tools, func(t checkedTool) bool { return t.name == call.Name })
	v := verdict{repair: c.mode == chat.ValidationRepair || i >= 0 && c.tools[i].strict}
	if !v.repair && c.mode == chat.ValidationOff {
		v.unchecked = true
		return v
	}
	if i < 0 {
		v.violations = toolcheck.UnknownTool(call.Name)
		return v
	}
	return c.against(v, c.tools[i].schema, c.tools[i].name, call.Arguments)
}

// checkAnswer checks the answer tool's input, text, against the response_format schema.
func (c *Check) checkAnswer(text string) verdict {
	return c.against(verdict{repair: c.mode == chat.ValidationRepair}, c.answer, "response_format", text)
}

// warning is a warning about calls not checked, with its own rate limit: a client can
// make any of them as often as it likes (every distinct schema it sends may not compile),
// and one kind must not hide another.
type warning struct {
	msg   string
	limit *ratelog.Limiter
}

// uncheckedWarnings are the warnings about calls not checked, one for each reason: a
// schema that does not compile (once per schema, when it enters the cache), a request's
// compile budget spent, a check that would cost too much.
type uncheckedWarnings struct{ uncompiled, overBudget, tooCostly warning }

func newUncheckedWarnings(now func() time.Time) uncheckedWarnings {
	w := func(msg string) warning { return warning{msg, ratelog.New(0, "warnings", now)} }
	return uncheckedWarnings{
		uncompiled: w("tool schema cannot be compiled; its calls are not checked"),
		overBudget: w("tool schema not compiled: the request spent its compile budget; its calls are not checked"),
		tooCostly:  w("tool call not checked: its check would cost too much"),
	}
}

// against completes v with what checking args against schema finds; tool names the
// schema in the log line of a call not checked.
func (c *Check) against(v verdict, source []byte, tool, args string) verdict {
	schema, err, fresh := c.g.schemas.Schema(source, c.budget)
	warn := &c.g.warnings.uncompiled
	switch {
	case errors.Is(err, toolcheck.ErrOverBudget):
		warn, fresh = &c.g.warnings.overBudget, true
	case err == nil:
		if v.violations, err = schema.Check(args, c.budget); err != nil {
			warn, fresh = &c.g.warnings.tooCostly, true
		}
	}
	if err != nil {
		if fresh {
			warn.limit.Warn(c.g.log, warn.msg,
				zap.String("request_id", c.requestID), zap.String("model", clip.String(c.model, clip.LogMax)),
				zap.String("tool", clip.String(tool, clip.LogMax)), zap.String("error", clip.String(err.Error(), clip.LogMax)))
		}
		v.unchecked = true
	}
	return v
}

// checkAll checks an answer's calls, in their order, then the answer tool's call when the
// answer came through it and it is checked.
func (c *Check) checkAll(resp *chat.Response) []verdict {
	out := make([]verdict, len(resp.ToolCalls), len(resp.ToolCalls)+1)
	for i := range resp.ToolCalls {
		out[i] = c.check(&resp.ToolCalls[i])
	}
	if resp.AnswerID != "" && c.answer != nil {
		out = append(out, c.checkAnswer(resp.Text))
	}
	return out
}

// needsRepair reports whether a call in repair mode is invalid.
func needsRepair(vs []verdict) bool {
	return slices.ContainsFunc(vs, func(v verdict) bool { return v.repair && len(v.violations) > 0 })
}

// settle writes the verdicts into the calls returned (their ValidationErrors), counts their
// outcomes into out, and returns the answer's outcome: invalid when a call goes back with
// violations, else repaired when tried (a repair was attempted), else "". vs may hold one
// verdict more than calls: the answer tool's, which counts but has no call to write into.
func settle(calls []chat.ToolCall, vs []verdict, tried bool, out *Outcomes) string {
	outcome := ""
	if tried {
		outcome = Repaired
	}
	for i, v := range vs {
		if len(v.violations) > 0 {
			if i < len(calls) {
				calls[i].ValidationErrors = v.violations
			}
			outcome = Invalid
		}
	}
	for _, v := range vs {
		switch {
		case len(v.violations) > 0 && tried:
			out.Unrepaired++
		case len(v.violations) > 0:
			out.Invalid++
		case v.unchecked:
			out.Unchecked++
		case outcome == Repaired:
			out.Repaired++
		default:
			out.Valid++
		}
	}
	return outcome
}
