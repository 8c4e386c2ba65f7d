package core

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/store"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Stream is one streamed answer: Bedrock's events turned into chat events. It is not safe
// for concurrent use. Close it on every path: it holds the upstream connection and a slot
// of the concurrency cap.
type Stream struct {
	svc       *Service
	ctx       context.Context
	requestID string
	src       *bedrock.EventStream
	machine   *stream.Machine
	prepared  *prepared
	// parent is the request's context, which repair attempts run under (ctx is bounded by
	// this stream's upstream_timeout).
	parent context.Context
	// hold holds the tool calls while they are checked (docs/PROTOCOL.md 13.2); nil when
	// none is. rec records the answer's turn for a repair; nil when none may be needed.
	hold    *callHolder
	rec     *stream.Recorder
	scratch []chat.Event
	// final is the answer a held stream ended with, once checked (and repaired).
	final *chat.Response
	// replay holds a unary answer replayed as a stream, for models without streaming tool
	// use; src and machine are nil then.
	replay []chat.Event
	// span is the Bedrock call's client span, ended with the stream; nil when none is
	// made.
	span *upstreamSpan
	// done releases the upstream: the connection, the deadline and the slot.
	done   func()
	start  time.Time
	result Result
	// sentFirst: the first event was produced (and its time recorded).
	sentFirst bool
	// text is the answer's text so far when it is to be checked as a json_object; nil
	// otherwise.
	text *strings.Builder
	// metered: the key has token limits (docs/PROTOCOL.md 14.2), so written counts the
	// bytes of the answer passed on, for a stream that ends before Bedrock's usage;
	// counted says its usage was counted.
	metered, counted bool
	written          int
}

// Stream prepares req and opens Bedrock's answer, failing over between the request's
// targets (docs/PROTOCOL.md 14.4). An error here comes before any byte reached the client,
// so it is answered with a status (a throttled request is a 429, not a 200 with an error
// line). The Result is filled as far as the call got.
func (s *Service) Stream(ctx context.Context, req *chat.Request) (*Stream, Result, error) {
	start := time.Now()
	ctx = store.WithBudget(ctx, s.opts.StoreTimeout) // the stream's last calls (settle, remember) share it
	var res Result
	p, err := s.prepare(ctx, req, &res)
	if err != nil {
		return nil, res, err
	}
	returned := false
	defer func() {
		if !returned { // an error, or a panic, before the Stream owns the request's quota
			p.quota.settle(ctx)
		}
	}()
	release, err := s.admit()
	if err != nil {
		return nil, res, err
	}
	st := &Stream{svc: s, requestID: req.ID, start: start, parent: ctx}
	callCtx, cancel := context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	opened := false
	defer func() {
		if !opened { // an error, a replayed answer, or a panic before the Stream owns the slot
			cancel()
			release()
		}
	}()
	var unary *chat.Response
	var turn bedrock.Message
	err = s.tryTargets(callCtx, req.ID, p, &res, func(ctx context.Context) (err error) {
		if p.converse.ToolConfig != nil && !p.model.StreamingTools {
			// docs/BEDROCK.md E: ConverseStream refuses tools on this model; answer
			// unary, then replay the answer as a stream.
			unary, turn, err = s.call(ctx, req.ID, p, p.converse)
			return err
		}
		unary = nil
		st.src, st.span, err = s.open(ctx, req.ID, p)
		return err
	})
	if err != nil {
		if callCtx.Err() != nil {
			p.quota.cutShort(0)
		}
		return nil, res, err
	}
	st.result, st.prepared = res, p
	if p.names.JSONObject {
		st.text = &strings.Builder{}
	}
	if unary != nil {
		s.answered(ctx, &p.route)
		resp, err := s.settle(ctx, req.ID, p, unary, turn)
		if err != nil {
			return nil, res, err
		}
		st.replay, st.done = stream.Synthesize(resp), func() {}
		st.result.Usage, st.result.ToolCalls, st.result.DroppedToolCalls = resp.Usage, len(resp.ToolCalls), resp.DroppedToolCalls
		p.validated.result(&st.result)
		st.counted, returned = true, true
		return st, res, nil
	}
	events := st.src
	closed := s.opts.Metrics.StreamOpened(req.ClientType)
	st.ctx, st.machine = callCtx, stream.NewMachine(p.names)
	st.metered = p.quota != nil && p.key.countsTokens()
	if p.check != nil {
		st.hold = newCallHolder(p.check)
		if p.check.canRepair {
			st.rec = stream.NewRecorder(events)
		}
	}
	// The request and its translation served to open the stream; only a repair sends the
	// translation again. The stream holds p for as long as it is open, so what it no
	// longer needs is let go.
	p.req = nil
	if st.rec == nil {
		p.converse = nil
	}
	st.done = func() {
		_ = events.Close()
		cancel()
		release()
		closed()
	}
	opened, returned = true, true
	return st, res, nil
}

// open opens the ConverseStream of p on its current target, with its span. When another
// target is left, it reads the stream up to its first content (bedrock.EventStream.Start):
// a failure that comes before it has reached no client yet, so it is answered with a
// status, and failover covers it where its code says so; the stream is closed then. An
// end before any content is left to the stream machine, which names it truncated. Without
// another target the stream is handed on as it is, unread.
func (s *Service) open(ctx context.Context, requestID string, p *prepared) (*bedrock.EventStream, *upstreamSpan, error) {
	ctx, span := s.traceUpstream(ctx, p, p.converse)
	events, err := p.up().ConverseStream(ctx, p.model.ID, p.converse)
	if err != nil {
		span.endStream(nil, err)
		s.upstreamFailed(ctx, requestID, p.model.ID, err)
		return nil, nil, blame(p.names, err)
	}
	if p.route.more() {
		if err := events.Start(); err != nil && err != io.EOF {
			_ = events.Close()
			span.endStream(nil, err)
			s.upstreamFailed(ctx, requestID, p.model.ID, err)
			return nil, nil, blame(p.names, err)
		}
	}
	return events, span, nil
}

// Next appends the events of the next upstream event to out, and of those after it that
// have already arrived: a transport writes what one call returns at once, so a burst of
// Bedrock events costs one write to the client, while an event that comes alone is passed
// on without waiting for the next. It returns io.EOF, with the last events in out, once
// the stream is complete, and any other error when the upstream failed after the stream
// started.
func (st *Stream) Next(out []chat.Event) ([]chat.Event, error) {
	from := len(out)
	out, err := st.next(out)
	if st.metered {
		for i := from; i < len(out); i++ {
			st.written += len(out[i].Text) + len(out[i].ToolCall.Arguments)
		}
	}
	if st.text != nil {
		for i := from; i < len(out); i++ {
			if out[i].Kind == chat.EventContent {
				st.text.WriteString(out[i].Text)
			}
		}
		if err == io.EOF {
			st.result.FormatInvalid = !translate.OneJSONObject(st.text.String())
		}
	}
	return out, err
}

func (st *Stream) next(out []chat.Event) ([]chat.Event, error) {
	if st.machine == nil {
		out = append(out, st.replay...)
		st.replay = nil
		st.firstEvent(out)
		return out, io.EOF
	}
	var src stream.Events = st.src
	if st.rec != nil {
		src = st.rec
	}
	// Without a holder the machine appends to out; with one, each event's output goes
	// through it as it comes, so scratch holds one Bedrock event's chat events, not a
	// whole burst's (a chat.Event is 224 bytes).
	step := func() (err error) {
		if st.hold == nil {
			out, err = st.machine.Step(src, out)
			return err
		}
		st.scratch, err = st.machine.Step(src, st.scratch[:0])
		out = st.hold.pass(st.scratch, out)
		return err
	}
	err := step()
	for err == nil && st.src.Ready() {
		err = step()
	}
	if err != nil { // the Bedrock call has ended; a repair's calls have spans of their own, and count their own usage
		st.span.endStream(st.machine, err)
		st.span = nil
		st.prepared.quota.count(st.machine.Usage()) // zeros unless Bedrock's final event came
		st.counted = err == io.EOF
	}
	if st.hold != nil && err == io.EOF && st.hold.untilDone {
		out, err = st.finishHeld(out)
	}
	st.firstEvent(out)
	if err != nil && err != io.EOF {
		st.svc.upstreamFailed(st.ctx, st.requestID, st.result.Model, err)
	}
	if err == io.EOF {
		st.svc.answered(st.ctx, &st.prepared.route)
		st.svc.logUnknownStop(st.requestID, st.machine.StopReason())
		st.result.Usage, st.result.ToolCalls, st.result.DroppedToolCalls = st.machine.Usage(), st.machine.ToolCalls(), st.machine.Dropped()
		ids := st.machine.ToolCallIDs(nil)
		if h := st.hold; h != nil {
			if !h.untilDone {
				st.prepared.validated.outcome, st.prepared.validated.outcomes = h.outcome, h.outcomes
			}
			st.result.ToolCalls, ids = len(h.sent), h.ids()
		}
		if f := st.final; f != nil {
			st.result.Usage, st.result.DroppedToolCalls = f.Usage, f.DroppedToolCalls
		}
		st.prepared.validated.result(&st.result)
		if blocks := st.machine.Reasoning(); len(blocks) > 0 && len(ids) > 0 {
			st.svc.remember(st.ctx, st.prepared, ids, blocks)
		}
	}
	return out, err
}

// finishHeld ends a stream whose calls waited for its end: they are checked, and repaired
// where their mode says so, with further model calls (not streamed: only their calls
// reach the client), then go out, and done after them with the usage of every attempt.
func (st *Stream) finishHeld(out []chat.Event) ([]chat.Event, error) {
	first := st.hold.held(st.machine.AnswerID())
	if first == nil {
		return out, nil // the machine produced no done: its error says why
	}
	first.StopReason, first.DroppedToolCalls = st.machine.StopReason(), st.machine.Dropped()
	resp, err := st.svc.checkAnswer(st.parent, st.requestID, st.prepared, first, st.rec.Turn())
	if err != nil {
		return out, err
	}
	st.final = resp
	return st.hold.finish(out, resp), io.EOF
}

func (st *Stream) firstEvent(out []chat.Event) {
	if !st.sentFirst && len(out) > 0 {
		st.sentFirst = true
		st.svc.opts.Metrics.FirstEvent(st.result.Model, st.result.ClientType, time.Since(st.start))
	}
}

// Result is what the call did; usage and tool calls are set once the stream is complete.
func (st *Stream) Result() Result { return st.result }

// Close releases the upstream. It is safe to call more than once.
func (st *Stream) Close() error {
	if st.span != nil { // closed before the stream ended: the client left, or its write failed
		st.span.endStream(nil, context.Canceled)
		st.span = nil
	}
	if st.prepared != nil {
		if !st.counted { // ended before Bedrock's usage: counted by estimate
			st.counted = true
			st.prepared.quota.cutShort(st.written)
		}
		st.prepared.quota.settle(st.parent)
	}
	if st.done != nil {
		st.done()
		st.done = nil
	}
	return nil
}
