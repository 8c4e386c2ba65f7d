package server

import (
	"context"
	"io"
	"time"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/stream"
)

// Stream is one streamed answer: Bedrock's events turned into client events. It is not
// safe for concurrent use. Close it on every path: it holds the upstream connection and a
// slot of the concurrency cap.
type Stream struct {
	svc     *Service
	ctx     context.Context
	src     stream.Events
	machine *stream.Machine
	// replay holds a unary answer replayed as a stream, for models without streaming tool
	// use; src and machine are nil then.
	replay []chat.Event
	// done releases the upstream: the connection, the deadline and the slot.
	done  func()
	model string
	// first is true once the first client events were produced.
	first bool
}

// OpenStream prepares req and opens Bedrock's answer. An error here comes before any byte
// reached the client, so it is answered with a status (a throttled request is a 429, not
// a 200 with an error line).
func (s *Service) OpenStream(ctx context.Context, req *llmgatewayv1.ChatRequest) (*Stream, error) {
	p, err := s.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if p.converse.ToolConfig != nil && !p.model.StreamingTools {
		// docs/BEDROCK.md E: ConverseStream refuses tools on this model; answer unary, replay.
		resp, err := s.converse(ctx, p)
		if err != nil {
			return nil, err
		}
		return &Stream{svc: s, ctx: ctx, replay: stream.Synthesize(resp), done: func() {}}, nil
	}
	release, err := s.admit()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	opened := false
	defer func() {
		if !opened { // an error, or a panic, before the Stream owns the slot
			cancel()
			release()
		}
	}()
	events, err := s.upstream.ConverseStream(ctx, p.model.ID, p.converse)
	if err != nil {
		s.upstreamFailed(ctx, p.model.ID, err)
		return nil, err
	}
	closed := s.opts.Metrics.StreamOpened(req.GetClientType())
	m := stream.NewMachine(p.names)
	done := func() {
		_ = events.Close()
		cancel()
		release()
		closed()
	}
	opened = true
	return &Stream{svc: s, ctx: ctx, src: events, machine: m, model: p.model.ID, done: done}, nil
}

// Next appends the client events of the next upstream event to out. It returns io.EOF,
// with the last events in out, once the stream is complete, and any other error when the
// upstream failed after the stream started.
func (st *Stream) Next(out []chat.Event) ([]chat.Event, error) {
	if st.machine == nil {
		out = append(out, st.replay...)
		st.replay = nil
		return out, io.EOF
	}
	out, err := st.machine.Step(st.src, out)
	if !st.first && len(out) > 0 {
		st.first = true
		info := callInfoFrom(st.ctx)
		st.svc.opts.Metrics.FirstEvent(info.model, info.clientType, time.Since(info.start))
	}
	if err != nil && err != io.EOF {
		st.svc.upstreamFailed(st.ctx, st.model, err)
	}
	if err == io.EOF {
		st.svc.logUnknownStop(st.ctx, st.machine.StopReason())
		info := callInfoFrom(st.ctx)
		info.usage(st.machine.Usage())
		info.toolCalls = st.machine.ToolCalls()
	}
	return out, err
}

// Close releases the upstream. It is safe to call more than once.
func (st *Stream) Close() error {
	if st.done != nil {
		st.done()
		st.done = nil
	}
	return nil
}
