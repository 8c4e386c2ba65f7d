package core

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
)

// Failover between an alias's targets (docs/PROTOCOL.md 14.4).

// Target is one place the calls to an alias may go: a Bedrock model id in a region.
type Target struct {
	ModelID string
	// Region names the upstream of Options.Regions that serves the target; "" is the
	// upstream New is given, in the gateway's own region.
	Region string
}

// target is a Target ready for calls.
type target struct {
	Target
	up Upstream
	// family is the foundation model: the model id without its region prefix, which
	// reasoning blocks are bound to (docs/BEDROCK.md G9); the id itself when it names
	// none (an application inference profile).
	family string
	// name is the target in logs and in the affinity's memory: the model id, with
	// "@region" when the target has a region.
	name string
}

func newTarget(t Target, up Upstream) target {
	name := t.ModelID
	if t.Region != "" {
		name += "@" + t.Region
	}
	return target{Target: t, up: up, family: familyOf(t.ModelID), name: name}
}

// familyOf is a model id's foundation model, or the id when it names none.
func familyOf(modelID string) string {
	if f := capabilities.FamilyOf(modelID); f != "" {
		return f
	}
	return modelID
}

// alias is a configured alias: its name and its targets, in the order calls try them.
type alias struct {
	name    string
	targets []target
}

// route is where one request's Bedrock call may go, and how far it got: the request's
// targets are tried once each, the first the conversation's affinity target (the target
// that last answered it) or else the alias's first, then the others in their order.
// Not safe for concurrent use.
type route struct {
	// alias is the alias the request names; nil when it names a model id, whose one
	// target is one.
	alias *alias
	one   target
	// first is the index of the target tried first; attempt counts the targets tried
	// before the current one.
	first, attempt int
	// conversation is the request's affinity key; set only for an alias of several
	// targets.
	conversation conversationKey
}

// len is how many targets the request may try.
func (r *route) len() int {
	if r.alias == nil {
		return 1
	}
	return len(r.alias.targets)
}

// at is the k-th target to try: first, then the others in order.
func (r *route) at(k int) *target {
	if r.alias == nil {
		return &r.one
	}
	i := k
	switch {
	case k == 0:
		i = r.first
	case k <= r.first:
		i = k - 1
	}
	return &r.alias.targets[i]
}

// target is the target of the current attempt.
func (r *route) target() *target { return r.at(r.attempt) }

// more reports whether a target is left after the current one.
func (r *route) more() bool { return r.attempt+1 < r.len() }

// otherModel reports whether the current target is another foundation model than the one
// that last answered the conversation, the first tried (docs/PROTOCOL.md 14.4): the
// history's reasoning blocks are not its own.
func (r *route) otherModel() bool { return r.target().family != r.at(0).family }

// tryTargets makes call, one Bedrock call of p on its current target, and after each
// failure failover covers, the same call on the next target, translated for it, until one
// answers or none is left; every attempt runs under ctx, so within one upstream_timeout.
// It returns the error to answer with: a failure failover does not cover, the last
// target's, or a translation's (nextTarget). call must fail only before anything of its
// answer reached the client. Each move is logged and counted. res follows the attempt
// that is made. This is the one loop of attempts: unary calls, unary calls streamed from
// Bedrock and streams all run it; each caller records the conversation's affinity
// (answered) once the answer is whole, a stream at its end.
func (s *Service) tryTargets(ctx context.Context, requestID string, p *prepared, res *Result, call func(context.Context) error) error {
	for {
		err := call(ctx)
		if err == nil {
			return nil
		}
		code := failoverCode(err)
		if code == "" || ctx.Err() != nil {
			return err
		}
		from := p.route.target()
		if !s.nextTarget(ctx, requestID, p, res) {
			return err
		}
		s.opts.Metrics.Failover(p.route.alias.name, code)
		s.log.Warn("failing over", zap.String("request_id", requestID), zap.String("alias", p.route.alias.name),
			zap.String("from", clip.String(from.name, clip.LogMax)), zap.String("to", clip.String(p.route.target().name, clip.LogMax)),
			zap.String("error_code", code))
	}
}

// nextTarget moves p on to its next target and translates the request for it. A target
// the request cannot be translated for (a model without a feature the request uses) is
// passed over, logged: the request was valid for the target that failed, and that
// target's error says more to the client than a refusal by a fallback. It reports
// whether a target was left.
func (s *Service) nextTarget(ctx context.Context, requestID string, p *prepared, res *Result) bool {
	for p.route.more() {
		p.route.attempt++
		err := s.translate(ctx, p, res)
		if err == nil {
			return true
		}
		s.log.Info("failover target passed over: the request cannot be translated for it", zap.String("request_id", requestID),
			zap.String("alias", p.route.alias.name), zap.String("target", clip.String(p.route.target().name, clip.LogMax)))
	}
	return false
}

// failoverCode is the Bedrock error code of an error failover moves on after: the target
// is busy or failing, not the request wrong (docs/PROTOCOL.md 14.4); "" for any other.
func failoverCode(err error) string {
	var apiErr *bedrock.APIError
	if errors.As(err, &apiErr) && apiErr.Failover() {
		return apiErr.Code
	}
	return ""
}

// routeOf is where a request naming name (an alias, or a model id) may go. For an alias
// of several targets it looks up the conversation's affinity (affinity.go).
func (s *Service) routeOf(ctx context.Context, req *chat.Request, name string) route {
	a, ok := s.aliases[name]
	if !ok {
		return route{one: newTarget(Target{ModelID: name}, s.upstream)}
	}
	r := route{alias: a}
	if len(a.targets) > 1 {
		r.conversation = conversationOf(a.name, req)
		r.first = s.affinity.lookup(ctx, a, r.conversation)
	}
	return r
}

// answered remembers the target that answered as the conversation's, for an alias of
// several targets.
func (s *Service) answered(ctx context.Context, r *route) {
	if r.alias != nil && len(r.alias.targets) > 1 {
		s.affinity.remember(ctx, r.conversation, r.target().name)
	}
}
