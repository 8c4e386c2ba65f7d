package core

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
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
// Schemas were measured when the request was admitted (checkSchemas); they are compiled
// when a call of theirs comes back, within the request's compile budget.

// ToolOutcomes counts an answer's tool calls by the outcome of their check, the outcome
// label of gateway_tool_calls_total.
type ToolOutcomes struct {
	Valid, Invalid, Repaired, Unrepaired, Unchecked int
}

// Total is the number of calls counted.
func (o ToolOutcomes) Total() int {
	return o.Valid + o.Invalid + o.Repaired + o.Unrepaired + o.Unchecked
}

// record adds the counts to m, by outcome.
func (o ToolOutcomes) record(m *metrics.Metrics, model, clientType string) {
	m.ToolCalls(model, clientType, metrics.ToolValid, o.Valid)
	m.ToolCalls(model, clientType, metrics.ToolInvalid, o.Invalid)
	m.ToolCalls(model, clientType, metrics.ToolRepaired, o.Repaired)
	m.ToolCalls(model, clientType, metrics.ToolUnrepaired, o.Unrepaired)
	m.ToolCalls(model, clientType, metrics.ToolUnchecked, o.Unchecked)
}

// StrictUnenforced is the x-gateway-strict value of an answer whose strict tools were
// neither held to their schemas by the model nor repaired (Result.StrictUnenforced).
const StrictUnenforced = "unenforced"

// Outcomes of an answer's validation: the x-gateway-tool-validation header, gRPC's
// metadata.tool_validation.
const (
	// ValidationInvalid: calls are returned with their violations.
	ValidationInvalid = "invalid"
	// ValidationRepaired: the model corrected its calls; they are all valid.
	ValidationRepaired = "repaired"
)

// validation is how a request's tool calls are checked.
type validation struct {
	// mode is off, report or repair.
	mode string
	// operatorOff: the operator turned validation off for the request, so it is off
	// whatever the request asks, and strict tools are not repaired either.
	operatorOff bool
}

// validationOf is a request's tool_validation. The operator's level is the most specific
// one set: the key's default, else the alias's (d, see applyDefaults), else the
// gateway's, else report. Off there is off (docs/PROTOCOL.md 13.1, 13.2): the operator
// turns checking off for the gateway, an alias or a key, and no request turns it back on.
// Otherwise the request's own value wins, so a request may ask for repair where the
// operator's default is report. A value that is none of the modes is refused, naming the
// field.
func (s *Service) validationOf(req *chat.Request, d AliasDefaults) (validation, error) {
	switch req.ToolValidation {
	case "", chat.ValidationOff, chat.ValidationReport, chat.ValidationRepair:
	default:
		return validation{}, refuse("tool_validation %s is not one of \"off\", \"report\", \"repair\"", clip.Quote(req.ToolValidation))
	}
	operator := cmp.Or(d.ToolValidation, s.opts.ToolValidation, chat.ValidationReport)
	if operator == chat.ValidationOff {
		return validation{mode: chat.ValidationOff, operatorOff: true}, nil
	}
	return validation{mode: cmp.Or(req.ToolValidation, operator)}, nil
}

// checker checks the tool calls of one request's answers. Not safe for concurrent use: it
// belongs to the request.
type checker struct {
	svc  *Service
	mode string // the request's tool_validation
	// tools are the request's tools, in the client's names; strict[i] says tool i's calls
	// are repaired whatever mode says.
	tools  []chat.Tool
	strict []bool
	// canRepair: some call may be repaired (mode repair, or a strict tool in strict).
	canRepair bool
	// answer is the response_format schema the answer tool's input is checked against;
	// nil when the request has no answer tool or mode is off.
	answer    []byte
	requestID string
	model     string
	// budget is what the request may still spend compiling schemas the cache lacks.
	budget *toolcheck.Budget
}

// newChecker is the checker of a translated request; nil when nothing is checked: no call
// can come back (the model is offered no tools of the client's, or its tool budget is
// spent) and there is no answer tool to check, or mode is off and no strict tool falls
// back to repair. unenforced reports strict tools offered to a model without native strict
// tool use that are not repaired either, as the operator turned validation off: their
// calls come without a guarantee, and the answer says so (x-gateway-strict).
func (s *Service) newChecker(req *chat.Request, model capabilities.Model, v validation, offered bool, names *translate.Names, budget *toolcheck.Budget) (c *checker, unenforced bool) {
	answer := names.AnswerTool != "" && v.mode != chat.ValidationOff
	if !offered && !answer {
		return nil, false
	}
	c = &checker{svc: s, mode: v.mode, requestID: req.ID, model: model.ID, canRepair: v.mode == chat.ValidationRepair, budget: budget}
	if answer {
		c.answer = req.ResponseFormat.Schema
	}
	if offered {
		c.tools = req.Tools
		for i := range req.Tools {
			switch {
			case !translate.StrictRepair(&req.Tools[i], model):
			case v.operatorOff:
				unenforced = true
			default:
				if c.strict == nil {
					c.strict = make([]bool, len(req.Tools))
				}
				c.strict[i], c.canRepair = true, true
			}
		}
	}
	if v.mode == chat.ValidationOff && c.strict == nil {
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
func (c *checker) check(call *chat.ToolCall) verdict {
	i := slices.IndexFunc(c.tools, func(t chat.Tool) bool { return t.Name == call.Name })
	v := verdict{repair: c.mode == chat.ValidationRepair || i >= 0 && c.strict != nil && c.strict[i]}
	if !v.repair && c.mode == chat.ValidationOff {
		v.unchecked = true
		return v
	}
	if i < 0 {
		v.violations = toolcheck.UnknownTool(call.Name)
		return v
	}
	return c.against(v, c.tools[i].Parameters, c.tools[i].Name, call.Arguments)
}

// checkAnswer checks the answer tool's input, text, against the response_format schema.
func (c *checker) checkAnswer(text string) verdict {
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
func (c *checker) against(v verdict, source []byte, tool, args string) verdict {
	schema, err, fresh := c.svc.schemas.Schema(source, c.budget)
	warn := &c.svc.warnings.uncompiled
	switch {
	case errors.Is(err, toolcheck.ErrOverBudget):
		warn, fresh = &c.svc.warnings.overBudget, true
	case err == nil:
		if v.violations, err = schema.Check(args, c.budget); err != nil {
			warn, fresh = &c.svc.warnings.tooCostly, true
		}
	}
	if err != nil {
		if fresh {
			warn.limit.Warn(c.svc.log, warn.msg,
				zap.String("request_id", c.requestID), zap.String("model", clip.String(c.model, clip.LogMax)),
				zap.String("tool", clip.String(tool, clip.LogMax)), zap.String("error", clip.String(err.Error(), clip.LogMax)))
		}
		v.unchecked = true
	}
	return v
}

// checkAll checks an answer's calls, in their order, then the answer tool's call when the
// answer came through it and it is checked.
func (c *checker) checkAll(resp *chat.Response) []verdict {
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
func settle(calls []chat.ToolCall, vs []verdict, tried bool, out *ToolOutcomes) string {
	outcome := ""
	if tried {
		outcome = ValidationRepaired
	}
	for i, v := range vs {
		if len(v.violations) > 0 {
			if i < len(calls) {
				calls[i].ValidationErrors = v.violations
			}
			outcome = ValidationInvalid
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
		case outcome == ValidationRepaired:
			out.Repaired++
		default:
			out.Valid++
		}
	}
	return outcome
}
