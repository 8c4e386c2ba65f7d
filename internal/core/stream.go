package core

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/nirmata/llm-gateway/internal/audit"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/toolguard"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Stream is one streamed answer: a turn (turn.go) whose answer is consumed event by event,
// Bedrock's events turned into chat events. It is not safe for concurrent use. Close it on
// every path: it holds the turn, with its upstream connection and concurrency slot, until
// Next returns its end or Close, whichever comes first.
type Stream struct {
	svc *Service
	t   *turn
	src *bedrock.EventStream
	// machine turns Bedrock's events into chat events (the response half of the
	// translation: internal/stream).
	machine *stream.Machine
	// hold holds the tool calls while they are checked (docs/PROTOCOL.md 13.2); nil when
	// none is. rec records the answer's turn for a repair; nil when none may be needed.
	hold    *toolguard.Holder
	rec     *stream.Recorder
	scratch []chat.Event
	// checkHeld: the answer ended in the last Next, whose events went out before its held
	// calls were checked; the next Next checks them.
	checkHeld bool
	// final is the answer a held stream ended with, once checked (and repaired).
	final *chat.Response
	// replay holds a unary answer replayed as a stream, for models without streaming tool
	// use; src and machine are nil then.
	replay []chat.Event
	// span is the Bedrock call's client span, ended with the stream; nil when none is
	// made.
	span *upstreamSpan
	// closed ends the stream's count in the metrics; nil for a replay.
	closed func()
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
	// answer holds the events that went out, for the Result's Answer (Options.Audit):
	// all of them at the full level, the tool calls' and the end's below it.
	answer []chat.Event
}

// Stream begins a turn for req and opens Bedrock's answer, failing over between the
// request's targets (docs/PROTOCOL.md 14.4). An error here comes before any byte reached
// the client, so it is answered with a status (a throttled request is a 429, not a 200
// with an error line). The Result is filled as far as the call got.
func (s *Service) Stream(ctx context.Context, req *chat.Request) (*Stream, Result, error) {
	t, err := s.begin(ctx, req)
	if err != nil {
		return nil, t.res, err
	}
	owned := false
	defer func() {
		if !owned { // an error, or a panic, before the Stream owns the turn
			t.end()
		}
	}()
	st := &Stream{svc: s, t: t}
	var unary *chat.Response
	var msg bedrock.Message
	err = s.tryTargets(t, func(ctx context.Context) (err error) {
		if t.converse.ToolConfig != nil && !t.model.StreamingTools {
			// docs/BEDROCK.md E: ConverseStream refuses tools on this model; answer
			// unary, then replay the answer as a stream.
			unary, msg, err = s.call(ctx, t, t.converse)
			return err
		}
		unary = nil
		st.src, st.span, err = s.open(ctx, t)
		return err
	})
	if err != nil {
		if t.callCtx.Err() != nil {
			s.cutShort(t, 0)
		}
		return nil, t.res, err
	}
	if t.plan.JSONObject {
		st.text = &strings.Builder{}
	}
	if unary != nil {
		s.router.Answered(t.ctx, &t.route)
		resp, err := s.settle(t, unary, msg)
		if err != nil {
			return nil, t.res, err
		}
		st.replay, st.counted, owned = stream.Synthesize(resp), true, true
		t.res.FinishReason = resp.Finish
		if t.audit != audit.Off {
			t.res.Answer = resp
		}
		return st, t.res, nil
	}
	st.closed = s.opts.Metrics.StreamOpened(req.ClientType)
	st.machine = stream.NewMachine(t.plan)
	st.metered = t.quota.Metered()
	st.hold = t.check.Hold()
	if t.check.CanRepair() {
		st.rec = stream.NewRecorder(st.src)
	}
	// The request and its translation served to open the stream; only a repair sends the
	// translation again. The stream holds the turn for as long as it is open, so what it
	// no longer needs is let go.
	t.req = nil
	if st.rec == nil {
		t.converse = nil
	}
	owned = true
	return st, t.res, nil
}

// open opens the ConverseStream of t on its current target, with its span. When another
// target is left, it reads the stream up to its first content (bedrock.EventStream.Start):
// a failure that comes before it has reached no client yet, so it is answered with a
// status, and failover covers it where its code says so; the stream is closed then. An
// end before any content is left to the stream machine, which names it truncated. Without
// another target the stream is handed on as it is, unread.
func (s *Service) open(ctx context.Context, t *turn) (*bedrock.EventStream, *upstreamSpan, error) {
	ctx, span := s.traceUpstream(ctx, t, t.converse)
	events, err := t.up().ConverseStream(ctx, t.model.ID, t.converse)
	if err != nil {
		span.endStream(nil, err)
		s.upstreamFailed(ctx, t.id, t.model.ID, err)
		return nil, nil, s.refused(t, err)
	}
	if t.route.More() {
		if err := events.Start(); err != nil && err != io.EOF {
			_ = events.Close()
			span.endStream(nil, err)
			s.upstreamFailed(ctx, t.id, t.model.ID, err)
			return nil, nil, s.refused(t, err)
		}
	}
	return events, span, nil
}

// Next appends the events of the next upstream event to out, and of those after it that
// have already arrived: a transport writes what one call returns at once, so a burst of
// Bedrock events costs one write to the client, while an event that comes alone is passed
// on without waiting for the next. It returns io.EOF, with the last events in out, once
// the stream is complete, and any other error when the upstream failed after the stream
// started. With either, the stream is over and its turn has ended (end), before the
// transport writes the last events.
func (st *Stream) Next(out []chat.Event) ([]chat.Event, error) {
	from := len(out)
	out, err := st.next(out)
	if st.metered {
		for i := from; i < len(out); i++ {
			st.written += len(out[i].Text) + len(out[i].ToolCall.Arguments)
		}
	}
	if st.t.audit != audit.Off && st.machine != nil {
		st.keep(out[from:])
		if err == io.EOF {
			st.t.res.Answer = stream.Collect(st.answer, st.machine)
		}
	}
	if err == io.EOF {
		for i := len(out) - 1; i >= from; i-- {
			if out[i].Kind == chat.EventDone {
				st.t.res.FinishReason = out[i].Finish
				break
			}
		}
	}
	if st.text != nil {
		for i := from; i < len(out); i++ {
			if out[i].Kind == chat.EventContent {
				st.text.WriteString(out[i].Text)
			}
		}
		if err == io.EOF {
			st.t.res.FormatInvalid = !translate.OneJSONObject(st.text.String())
		}
	}
	if err != nil {
		st.end()
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
	t := st.t
	var err error
	if st.checkHeld {
		st.checkHeld = false
		out, err = st.finishHeld(out)
	} else {
		from := len(out)
		out, err = st.read(out)
		if err == io.EOF && st.hold != nil && st.hold.UntilDone() {
			if len(out) > from {
				// What came with the answer's end goes out first: checking the held calls
				// may mean more model calls (a repair), which the text need not wait for.
				st.checkHeld = true
				st.firstEvent(out)
				return out, nil
			}
			out, err = st.finishHeld(out)
		}
	}
	st.firstEvent(out)
	if err != nil && err != io.EOF {
		st.svc.upstreamFailed(t.callCtx, t.id, t.res.Model, err)
	}
	if err == io.EOF {
		st.settle()
	}
	return out, err
}

// read steps the machine through the upstream events that have arrived (at least one)
// and appends what of them may go out now; io.EOF says the Bedrock answer is complete.
func (st *Stream) read(out []chat.Event) ([]chat.Event, error) {
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
		out = st.hold.Pass(st.scratch, out)
		return err
	}
	err := step()
	for err == nil && st.src.Ready() {
		err = step()
	}
	if err != nil { // the Bedrock call has ended; a repair's calls have spans of their own, and count their own usage
		st.span.endStream(st.machine, err)
		st.span = nil
		st.svc.used(st.t, st.machine.Usage()) // zeros unless Bedrock's final event came
		st.counted = err == io.EOF
	}
	return out, err
}

// settle is step 4 for a stream, at its end: the conversation's target remembered, what
// the answer was recorded in the Result, its reasoning kept for the client's next turn.
func (st *Stream) settle() {
	t, s := st.t, st.svc
	s.router.Answered(t.callCtx, &t.route)
	s.logUnknownStop(t.id, st.machine.StopReason())
	t.res.Usage, t.res.ToolCalls, t.res.DroppedToolCalls = st.machine.Usage(), st.machine.ToolCalls(), st.machine.Dropped()
	ids := st.machine.ToolCallIDs(nil)
	if h := st.hold; h != nil {
		t.res.ToolCalls, ids = h.Sent(), h.IDs()
	}
	if f := st.final; f != nil {
		t.res.Usage, t.res.DroppedToolCalls = f.Usage, f.DroppedToolCalls
	}
	t.checked()
	if blocks := st.machine.Reasoning(); len(blocks) > 0 && len(ids) > 0 {
		s.remember(t, ids, blocks)
	}
}

// finishHeld ends a stream whose calls waited for its end: they are checked, and repaired
// where their mode says so, with further model calls (not streamed: only their calls
// reach the client), then go out, and done after them with the usage of every attempt.
func (st *Stream) finishHeld(out []chat.Event) ([]chat.Event, error) {
	t := st.t
	first := st.hold.Held(st.machine.AnswerID())
	if first == nil {
		return out, nil // the machine produced no done: its error says why
	}
	first.StopReason, first.DroppedToolCalls = st.machine.StopReason(), st.machine.Dropped()
	resp, err := st.hold.Review(t.ctx, first, st.rec.Turn(), t.converse, repairs{st.svc, t})
	if err != nil {
		return out, err
	}
	st.final = resp
	return st.hold.Finish(out, resp), io.EOF
}

// keep keeps the events of out the call's audit level records (answer).
func (st *Stream) keep(out []chat.Event) {
	if st.t.audit == audit.Full {
		st.answer = append(st.answer, out...)
		return
	}
	for _, e := range out {
		if e.Kind == chat.EventToolCall || e.Kind == chat.EventDone {
			e.ToolCall.Arguments = "" // not recorded below full
			st.answer = append(st.answer, e)
		}
	}
}

func (st *Stream) firstEvent(out []chat.Event) {
	if !st.sentFirst && len(out) > 0 {
		st.sentFirst = true
		st.svc.opts.Metrics.FirstEvent(st.t.res.Model, st.t.res.ClientType, time.Since(st.t.start))
	}
}

// end ends the stream's turn, once: the upstream connection, the slot and the deadline are
// given back, and the key's usage settled (by estimate when the stream ended before
// Bedrock's usage). When Next returns the stream's end this comes before the transport
// writes the last events, so a client that sends its next request on reading them finds
// the slot free and this one's usage counted, as after a unary answer.
func (st *Stream) end() {
	if !st.counted {
		st.counted = true
		st.svc.cutShort(st.t, st.written)
	}
	if st.src != nil {
		_ = st.src.Close()
		st.src = nil
	}
	st.t.end()
}

// Result is what the call did; usage and tool calls are set once the stream is complete.
func (st *Stream) Result() Result { return st.t.res }

// Close ends the turn, unless Next has ended it, and the stream's count in the metrics. It
// is safe to call more than once.
func (st *Stream) Close() error {
	if st.span != nil { // closed before the stream ended: the client left, or its write failed
		st.span.endStream(nil, context.Canceled)
		st.span = nil
	}
	st.end()
	if st.closed != nil {
		st.closed()
		st.closed = nil
	}
	return nil
}
