package core

import (
	"context"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/route"
)

// tryTargets makes call, one Bedrock call of t on its current target, and after each
// failure failover covers (route.FailoverCode), the same call on the next target,
// translated for it, until one answers or none is left; every attempt runs under the
// turn's callCtx, so within one upstream_timeout. It returns the error to answer with: a failure failover
// does not cover, the last target's, or a translation's (nextTarget). call must fail only
// before anything of its answer reached the client. Each move is logged and counted. The
// Result follows the attempt that is made. This is the one loop of attempts: unary calls, unary
// calls streamed from Bedrock and streams all run it; each caller records the
// conversation's affinity (route.Router.Answered) once the answer is whole, a stream at
// its end.
func (s *Service) tryTargets(t *turn, call func(context.Context) error) error {
	ctx := t.callCtx
	for {
		err := call(ctx)
		if err == nil {
			return nil
		}
		code := route.FailoverCode(err)
		if code == "" || ctx.Err() != nil {
			return err
		}
		from := t.route.Name()
		if !s.nextTarget(t) {
			return err
		}
		t.res.Failovers++
		s.opts.Metrics.Failover(t.route.Alias(), code)
		s.log.Warn("failing over", zap.String("request_id", t.id), zap.String("alias", t.route.Alias()),
			zap.String("from", clip.String(from, clip.LogMax)), zap.String("to", clip.String(t.route.Name(), clip.LogMax)),
			zap.String("error_code", code))
	}
}

// nextTarget moves t on to its next target and translates the request for it. A target
// the request cannot be translated for (a model without a feature the request uses) is
// passed over, logged: the request was valid for the target that failed, and that
// target's error says more to the client than a refusal by a fallback. It reports
// whether a target was left.
func (s *Service) nextTarget(t *turn) bool {
	for t.route.Next() {
		err := s.translate(t)
		if err == nil {
			return true
		}
		s.log.Info("failover target passed over: the request cannot be translated for it", zap.String("request_id", t.id),
			zap.String("alias", t.route.Alias()), zap.String("target", clip.String(t.route.Name(), clip.LogMax)))
	}
	return false
}
