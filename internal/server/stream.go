package server

import (
	"context"
	"io"

	"go.uber.org/zap"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Stream is one streamed answer: Bedrock's events turned into client events. It is not
// safe for concurrent use. Close it on every path: it holds the upstream connection.
type Stream struct {
	src     stream.Events
	closer  io.Closer
	machine *stream.Machine
	// replay holds a unary answer replayed as a stream, for models without streaming tool
	// use; src and machine are nil then.
	replay []*llmgatewayv1.ChatStreamEvent
	log    *zap.Logger
	ctx    context.Context
}

// OpenStream prepares req and opens Bedrock's answer. An error here comes before any byte
// reached the client, so it is answered with a status (a throttled request is a 429, not
// a 200 with an error line). toolEnds turns on the tool_call_end markers the chunked
// encoder needs.
func (s *Service) OpenStream(ctx context.Context, req *llmgatewayv1.ChatRequest, toolEnds bool) (*Stream, error) {
	p, err := s.prepare(req)
	if err != nil {
		return nil, err
	}
	s.logRepairs(ctx, p.model.ID, p.names.Stats)
	if p.converse.ToolConfig != nil && !p.model.StreamingTools {
		// BEDROCK.md E: ConverseStream refuses tools on this model; answer unary, replay.
		answer, err := s.upstream.Converse(ctx, p.model.ID, p.converse)
		if err != nil {
			return nil, err
		}
		resp, err := translate.Response(answer, p.names)
		if err != nil {
			return nil, err
		}
		return &Stream{replay: stream.Synthesize(resp)}, nil
	}
	events, err := s.upstream.ConverseStream(ctx, p.model.ID, p.converse)
	if err != nil {
		return nil, err
	}
	m := stream.NewMachine(p.names)
	if toolEnds {
		m.EmitToolCallEnds()
	}
	return &Stream{src: events, closer: events, machine: m, log: s.log, ctx: ctx}, nil
}

// Next appends the client events of the next upstream event to out. It returns io.EOF,
// with the last events in out, once the stream is complete, and any other error when the
// upstream failed after the stream started.
func (st *Stream) Next(out []*llmgatewayv1.ChatStreamEvent) ([]*llmgatewayv1.ChatStreamEvent, error) {
	if st.machine == nil {
		out = append(out, st.replay...)
		st.replay = nil
		return out, io.EOF
	}
	out, err := st.machine.Step(st.src, out)
	if err == io.EOF && !translate.KnownStopReason(st.machine.StopReason()) {
		st.log.Warn("unknown Bedrock stop reason, answered as stop",
			zap.String("request_id", requestID(st.ctx)), zap.String("stop_reason", st.machine.StopReason()))
	}
	return out, err
}

// Close releases the upstream connection.
func (st *Stream) Close() error {
	if st.closer == nil {
		return nil
	}
	return st.closer.Close()
}

// errorEvent is the last event of a stream whose upstream failed after it started.
func errorEvent(c errClass) *llmgatewayv1.ChatStreamEvent {
	return stream.ErrorEvent(codeName(c.code), c.message)
}
