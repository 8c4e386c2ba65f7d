package core

import (
	"context"
	"errors"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Chat answers one request with one complete answer: a turn (turn.go) whose answer is
// taken whole. The Result is filled as far as the call got, errors included.
func (s *Service) Chat(ctx context.Context, req *chat.Request) (*chat.Response, Result, error) {
	t, err := s.begin(ctx, req)
	if err != nil {
		return nil, t.res, err
	}
	defer t.end()
	var resp *chat.Response
	var msg bedrock.Message
	err = s.tryTargets(t, func(ctx context.Context) (err error) {
		resp, msg, err = s.call(ctx, t, t.converse)
		return err
	})
	if err != nil {
		return nil, t.res, err
	}
	s.router.Answered(t.ctx, &t.route)
	if resp, err = s.settle(t, resp, msg); err != nil {
		return nil, t.res, err
	}
	t.res.FormatInvalid = t.plan.JSONObject && !translate.OneJSONObject(resp.Text)
	resp.ToolValidation = t.res.ToolValidation
	resp.Model = t.model.ID
	resp.LatencyMs = time.Since(t.start).Milliseconds()
	resp.RequestID = req.ID
	resp.Ignored = t.res.Ignored
	resp.Thinking = t.res.Thinking
	t.res.FinishReason = resp.Finish
	if t.audit != audit.Off {
		t.res.Answer = resp
	}
	return resp, t.res, nil
}

// call makes one Converse call of req, t.converse or a repair attempt's request, on t's
// current target: through Converse, or through ConverseStream for requests Converse does
// not serve. Nothing of it reaches the client before it returns. It has a span of its
// own, and counts its tokens against the key's limits: its usage, or, when it was cut
// short after it reached Bedrock (the client left, a timeout), the request's estimate.
func (s *Service) call(ctx context.Context, t *turn, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	ctx, span := s.traceUpstream(ctx, t, req)
	var (
		resp *chat.Response
		msg  bedrock.Message
		err  error
	)
	if t.plan.StreamOnly {
		resp, msg, err = s.converseStreamed(ctx, t, req)
	} else {
		resp, msg, err = s.converseUnary(ctx, t, req)
	}
	if err != nil && ctx.Err() != nil {
		s.cutShort(t, 0) // the client left, or a deadline passed, while Bedrock worked on it
	}
	span.endAnswer(resp, err)
	return resp, msg, err
}

func (s *Service) converseUnary(ctx context.Context, t *turn, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	answer, err := t.up().Converse(ctx, t.model.ID, req)
	if err != nil {
		s.upstreamFailed(ctx, t.id, t.model.ID, err)
		return nil, bedrock.Message{}, s.refused(t, err)
	}
	s.used(t, translate.Usage(answer.Usage)) // used, whether its answer is usable or not
	s.logUnknownStop(t.id, answer.StopReason)
	resp, err := translate.Response(answer, t.plan)
	if err != nil {
		return nil, bedrock.Message{}, err
	}
	return resp, *answer.Output.Message, nil
}

// converseStreamed answers a unary request through ConverseStream, for requests Converse
// does not serve (thinking with maxTokens above 21,333: docs/BEDROCK.md G12). The
// assistant message is recorded only when a repair may need it.
func (s *Service) converseStreamed(ctx context.Context, t *turn, req *bedrock.ConverseRequest) (*chat.Response, bedrock.Message, error) {
	events, err := t.up().ConverseStream(ctx, t.model.ID, req)
	if err != nil {
		s.upstreamFailed(ctx, t.id, t.model.ID, err)
		return nil, bedrock.Message{}, s.refused(t, err)
	}
	defer events.Close()
	var src stream.Events = events
	var rec *stream.Recorder
	if t.check.CanRepair() {
		rec = stream.NewRecorder(events)
		src = rec
	}
	m := stream.NewMachine(t.plan)
	var out []chat.Event
	for err == nil {
		out, err = m.Step(src, out)
	}
	s.used(t, m.Usage()) // Bedrock's final event carries it: zeros without
	if err != io.EOF {
		s.cutShort(t, 0) // it reached Bedrock
		s.upstreamFailed(ctx, t.id, t.model.ID, err)
		return nil, bedrock.Message{}, err
	}
	s.logUnknownStop(t.id, m.StopReason())
	var msg bedrock.Message
	if rec != nil {
		msg = rec.Turn()
	}
	return stream.Collect(out, m), msg, nil
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
		return metrics.UpstreamTruncated
	case errors.Is(err, fault.ErrUpstream):
		return metrics.UpstreamInvalidAnswer
	}
	return ""
}
