package core

import (
	"slices"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/toolcheck"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Tool validation (docs/PROTOCOL.md 13.2): every tool call an answer returns, once 13.4 and
// 13.5 have dropped what they drop, is checked against its tool's parameters. Each call
// has a mode: the request's tool_validation (its own, else its alias's, else the
// gateway's), or repair for a strict tool on a model without native strict tool use
// (13.1). An answer with an invalid call in repair mode is repaired (repair.go); other
// invalid calls are returned with their violations.

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

// Outcomes of an answer's validation: the x-gateway-tool-validation header, gRPC's
// metadata.tool_validation.
const (
	// ValidationInvalid: calls are returned with their violations.
	ValidationInvalid = "invalid"
	// ValidationRepaired: the model corrected its calls; they are all valid.
	ValidationRepaired = "repaired"
)

// validationMode is a request's tool_validation: its own, else its key's or its alias's
// default (d, see applyDefaults), else the gateway's. A value that is none of the modes is
// refused, naming the field.
func (s *Service) validationMode(req *chat.Request, d AliasDefaults) (string, error) {
	mode := req.ToolValidation
	switch mode {
	case chat.ValidationOff, chat.ValidationReport, chat.ValidationRepair:
		return mode, nil
	case "":
	default:
		return "", refuse("tool_validation %s is not one of \"off\", \"report\", \"repair\"", clip.Quote(mode))
	}
	if d.ToolValidation != "" {
		return d.ToolValidation, nil
	}
	if s.opts.ToolValidation != "" {
		return s.opts.ToolValidation, nil
	}
	return chat.ValidationReport, nil
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
	requestID string
	model     string
}

// newChecker is the checker of a translated request; nil when nothing is checked: the
// model is offered no tools (no call can come back), or mode is off and no strict tool
// falls back to repair.
func (s *Service) newChecker(req *chat.Request, model capabilities.Model, mode string, offered bool) *checker {
	if !offered {
		return nil
	}
	c := &checker{svc: s, mode: mode, tools: req.Tools, requestID: req.ID, model: model.ID, canRepair: mode == chat.ValidationRepair}
	for i := range req.Tools {
		if translate.StrictRepair(&req.Tools[i], model) {
			if c.strict == nil {
				c.strict = make([]bool, len(req.Tools))
			}
			c.strict[i], c.canRepair = true, true
		}
	}
	if mode == chat.ValidationOff && c.strict == nil {
		return nil
	}
	return c
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
	schema, err, fresh := c.svc.schemas.Schema(c.tools[i].Parameters)
	if err != nil {
		if fresh {
			c.svc.log.Warn("tool schema cannot be compiled; its calls are not checked",
				zap.String("request_id", c.requestID), zap.String("model", clip.String(c.model, clip.LogMax)),
				zap.String("tool", clip.String(c.tools[i].Name, clip.LogMax)), zap.String("error", clip.String(err.Error(), clip.LogMax)))
		}
		v.unchecked = true
		return v
	}
	v.violations = schema.Check(call.Arguments)
	return v
}

// checkAll checks calls.
func (c *checker) checkAll(calls []chat.ToolCall) []verdict {
	out := make([]verdict, len(calls))
	for i := range calls {
		out[i] = c.check(&calls[i])
	}
	return out
}

// needsRepair reports whether a call in repair mode is invalid.
func needsRepair(vs []verdict) bool {
	return slices.ContainsFunc(vs, func(v verdict) bool { return v.repair && len(v.violations) > 0 })
}

// settle writes the verdicts into the calls returned (their ValidationErrors), counts their
// outcomes into out, and returns the answer's outcome: invalid when a call goes back with
// violations, else repaired when tried (a repair was attempted), else "".
func settle(calls []chat.ToolCall, vs []verdict, tried bool, out *ToolOutcomes) string {
	outcome := ""
	if tried {
		outcome = ValidationRepaired
	}
	for i := range calls {
		if len(vs[i].violations) > 0 {
			calls[i].ValidationErrors = vs[i].violations
			outcome = ValidationInvalid
		}
	}
	for _, v := range vs[:len(calls)] {
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
