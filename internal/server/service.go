package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go"
	"go.uber.org/zap"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/metrics"
	"github.com/nirmata/llm-gateway/internal/stream"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Upstream is the part of Bedrock the gateway calls. *bedrock.Client implements it.
type Upstream interface {
	Converse(ctx context.Context, modelID string, req *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error)
	ConverseStream(ctx context.Context, modelID string, req *bedrock.ConverseRequest) (*bedrock.EventStream, error)
}

// Options configures a Service.
type Options struct {
	DefaultModel string
	// Aliases maps model names clients send to Bedrock model ids.
	Aliases map[string]string
	// Limits of one request: beyond them it is refused with 400.
	MaxTools, MaxMessages, MaxMessageBytes int
	// UpstreamTimeout bounds one Bedrock call, a whole stream included.
	UpstreamTimeout time.Duration
	// MaxConcurrent bounds the Bedrock calls in flight; beyond it, 503.
	MaxConcurrent int
	// Metrics records what happens; nil records nothing.
	Metrics *metrics.Metrics
}

// Errors of admission: both are 503 with Retry-After, so clients go elsewhere or wait.
// ErrDraining is also the cause with which calls still running at the end of a drain are
// cancelled.
var (
	errOverloaded = errors.New("the gateway is at its limit of concurrent upstream calls; retry shortly")
	ErrDraining   = errors.New("the gateway is shutting down; retry on another instance")
)

// Service answers chat requests; the gRPC and REST transports both call it. It is safe for
// concurrent use.
type Service struct {
	upstream Upstream
	opts     Options
	log      *zap.Logger
	// slots holds one token per Bedrock call in flight: the concurrency cap, and what a
	// drain waits on.
	slots    chan struct{}
	draining atomic.Bool
}

// NewService returns a Service calling upstream.
func NewService(upstream Upstream, opts Options, log *zap.Logger) *Service {
	s := &Service{upstream: upstream, opts: opts, log: log, slots: make(chan struct{}, opts.MaxConcurrent)}
	opts.Metrics.ConfiguredModels(s.listedModels(s.resolveModel(""))...)
	return s
}

// admit reserves a slot for one Bedrock call. Call release when the call has ended.
// Draining is checked again once the slot is held, so Drain, which waits for the slots to
// empty, cannot miss a call that was being admitted as it began.
func (s *Service) admit() (release func(), err error) {
	if s.draining.Load() {
		s.opts.Metrics.Rejected(metrics.RejectDraining)
		return nil, ErrDraining
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.opts.Metrics.Rejected(metrics.RejectOverloaded)
		return nil, errOverloaded
	}
	if s.draining.Load() {
		<-s.slots
		s.opts.Metrics.Rejected(metrics.RejectDraining)
		return nil, ErrDraining
	}
	done := s.opts.Metrics.Inflight()
	return func() { done(); <-s.slots }, nil
}

// upstreamFailed logs and counts a failed Bedrock call by Bedrock's error code. Bedrock's
// request id is what AWS support asks for.
func (s *Service) upstreamFailed(ctx context.Context, model string, err error) {
	if ctx.Err() != nil {
		return // the client left, the deadline passed or the drain ended it: not Bedrock's doing
	}
	var apiErr *bedrock.APIError
	var smithyErr smithy.APIError
	switch {
	case errors.As(err, &apiErr):
		s.opts.Metrics.UpstreamError(model, apiErr.Code)
		s.log.Warn("bedrock error", zap.String("request_id", requestID(ctx)), zap.String("model", model),
			zap.String("error_code", apiErr.Code), zap.String("bedrock_request_id", apiErr.RequestID))
	case errors.As(err, &smithyErr):
		s.opts.Metrics.UpstreamError(model, smithyErr.ErrorCode())
	case errors.Is(err, bedrock.ErrTransport):
		s.opts.Metrics.UpstreamError(model, metrics.UpstreamTransport) // answer() logs the detail
	case errors.Is(err, stream.ErrTruncated):
		s.opts.Metrics.UpstreamError(model, "truncated")
	case errors.Is(err, translate.ErrUpstream):
		s.opts.Metrics.UpstreamError(model, "invalid_answer")
	}
}

// Drain refuses new calls from now on, and waits until the calls in flight have ended or
// ctx ends. It reports whether they all ended.
func (s *Service) Drain(ctx context.Context) bool {
	s.draining.Store(true)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(s.slots) > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// Draining reports whether Drain was called.
func (s *Service) Draining() bool { return s.draining.Load() }

// prepared is a request translated and ready for Bedrock.
type prepared struct {
	model    capabilities.Model
	converse *bedrock.ConverseRequest
	names    *translate.Names
}

// prepare checks what only the gateway knows (provider, limits, model) and translates.
func (s *Service) prepare(ctx context.Context, req *llmgatewayv1.ChatRequest) (*prepared, error) {
	info := callInfoFrom(ctx)
	if n := len(req.GetClientType()); n > maxClientTypeBytes {
		return nil, fmt.Errorf("%w: client_type: %d bytes, at most %d are allowed", translate.ErrInvalidRequest, n, maxClientTypeBytes)
	}
	info.clientType = req.GetClientType()
	if err := checkModelID(req.GetModel()); err != nil {
		return nil, err
	}
	if p := req.GetProvider(); p != "" && !strings.EqualFold(p, "bedrock") {
		return nil, fmt.Errorf("%w: provider %s is not supported; this gateway serves \"bedrock\"", translate.ErrInvalidRequest, clip.Quote(p))
	}
	if err := s.checkLimits(req); err != nil {
		return nil, err
	}
	model := capabilities.Lookup(s.resolveModel(req.GetModel()))
	info.model = model.ID
	creq, err := RequestFromProto(req)
	if err != nil {
		return nil, err
	}
	converse, names, err := translate.Request(creq, model)
	if err != nil {
		return nil, err
	}
	s.logRepairs(ctx, model.ID, names.Stats)
	s.opts.Metrics.Repairs(model.ID, names.Stats.SynthesizedResults, names.Stats.OrphanResults)
	return &prepared{model: model, converse: converse, names: names}, nil
}

// Bounds on the free strings of a request that reach logs, labels or Bedrock.
const (
	// maxModelIDBytes is the longest modelId Converse accepts.
	maxModelIDBytes = 2048
	// maxClientTypeBytes bounds the caller label.
	maxClientTypeBytes = 256
)

// checkModelID refuses a model id longer than Bedrock accepts before it reaches a log, a
// label or Bedrock.
func checkModelID(model string) error {
	if n := len(model); n > maxModelIDBytes {
		return fmt.Errorf("%w: model: %d bytes, at most %d are allowed (Bedrock's limit for a model id)", translate.ErrInvalidRequest, n, maxModelIDBytes)
	}
	return nil
}

func (s *Service) checkLimits(req *llmgatewayv1.ChatRequest) error {
	if n := len(req.GetTools()); n > s.opts.MaxTools {
		return fmt.Errorf("%w: tools: %d tools given, at most %d are allowed", translate.ErrInvalidRequest, n, s.opts.MaxTools)
	}
	if n := len(req.GetMessages()); n > s.opts.MaxMessages {
		return fmt.Errorf("%w: messages: %d messages given, at most %d are allowed", translate.ErrInvalidRequest, n, s.opts.MaxMessages)
	}
	for i, m := range req.GetMessages() {
		if n := messageBytes(m); n > s.opts.MaxMessageBytes {
			return fmt.Errorf("%w: messages[%d]: %d bytes, at most %d are allowed", translate.ErrInvalidRequest, i, n, s.opts.MaxMessageBytes)
		}
	}
	return nil
}

// messageBytes is the size of what one message carries.
func messageBytes(m *llmgatewayv1.Message) int {
	n := len(m.GetContent()) + len(m.GetToolCallId())
	for _, p := range m.GetParts() {
		n += len(p.GetText()) + len(p.GetImageUrl().GetUrl())
	}
	for _, c := range m.GetToolCalls() {
		n += len(c.GetId()) + len(c.GetFunction().GetName()) + len(c.GetFunction().GetArguments())
	}
	return n
}

// logRepairs records what the translator had to repair in a client's history, so a client
// that keeps sending broken histories shows up in the log. Counts only: no prompt text.
func (s *Service) logRepairs(ctx context.Context, model string, st translate.Stats) {
	if st == (translate.Stats{}) {
		return
	}
	s.log.Info("request repaired",
		zap.String("request_id", requestID(ctx)),
		zap.String("model", model),
		zap.Int("synthesized_tool_results", st.SynthesizedResults),
		zap.Int("orphan_tool_results", st.OrphanResults),
		zap.Int("mapped_tool_names", st.MappedToolNames),
		zap.Int("mapped_tool_call_ids", st.MappedToolCallIDs),
		zap.Int("synthesized_tool_specs", st.SynthesizedToolSpecs),
		zap.String("tool_choice_fallback", st.ToolChoiceFallback),
		zap.Bool("dropped_top_p", st.DroppedTopP))
}

// logUnknownStop notes a stop reason the table does not know (answered as "stop").
func (s *Service) logUnknownStop(ctx context.Context, stopReason string) {
	if !translate.KnownStopReason(stopReason) {
		s.log.Warn("unknown Bedrock stop reason, answered as stop",
			zap.String("request_id", requestID(ctx)), zap.String("stop_reason", stopReason))
	}
}

// resolveModel applies the default and the configured aliases.
func (s *Service) resolveModel(name string) string {
	if name == "" {
		name = s.opts.DefaultModel
	}
	if id, ok := s.opts.Aliases[name]; ok {
		return id
	}
	return name
}

// Chat answers one request with one response.
func (s *Service) Chat(ctx context.Context, req *llmgatewayv1.ChatRequest) (*llmgatewayv1.ChatResponse, error) {
	start := time.Now()
	p, err := s.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, err := s.converse(ctx, p)
	if err != nil {
		return nil, err
	}
	resp.Model = p.model.ID
	resp.LatencyMs = time.Since(start).Milliseconds()
	resp.RequestID = requestID(ctx)
	return ResponseToProto(resp), nil
}

// converse makes one admitted, bounded Converse call and translates its answer.
func (s *Service) converse(ctx context.Context, p *prepared) (*chat.Response, error) {
	release, err := s.admit()
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	defer cancel()
	answer, err := s.upstream.Converse(ctx, p.model.ID, p.converse)
	if err != nil {
		s.upstreamFailed(ctx, p.model.ID, err)
		return nil, err
	}
	s.logUnknownStop(ctx, answer.StopReason)
	resp, err := translate.Response(answer, p.names)
	if err != nil {
		return nil, err
	}
	info := callInfoFrom(ctx)
	info.usage(resp.Usage)
	info.toolCalls = len(resp.ToolCalls)
	return resp, nil
}

// Client-facing tool_choice values; Bedrock's kinds map onto them.
var clientChoiceOf = map[string]string{
	capabilities.ChoiceAuto: "auto",
	capabilities.ChoiceAny:  "required",
	capabilities.ChoiceTool: "function",
}

// Capabilities describes the gateway, and model (or the default model) in the top-level
// flags. "none" is always offered: the gateway implements it by not sending tools.
func (s *Service) Capabilities(model string) (*llmgatewayv1.Capabilities, error) {
	if err := checkModelID(model); err != nil {
		return nil, err
	}
	m := capabilities.Lookup(s.resolveModel(model))
	choices := []string{}
	toolTypes := []string{}
	if m.Tools {
		toolTypes = append(toolTypes, "function")
		for _, kind := range []string{capabilities.ChoiceAuto, capabilities.ChoiceAny, capabilities.ChoiceTool} {
			if m.SupportsChoice(kind) {
				choices = append(choices, clientChoiceOf[kind])
			}
		}
		choices = append(choices, "none")
	}
	out := &llmgatewayv1.Capabilities{
		ToolsSupported:   m.Tools,
		ToolTypes:        toolTypes,
		StreamingTools:   m.Tools && m.StreamingTools,
		MaxTools:         int32(s.opts.MaxTools),
		StreamingFormats: []string{"jsonl", "chunked"},
		ToolChoice:       choices,
		DefaultModel:     s.opts.DefaultModel,
	}
	seen := map[string]bool{}
	for _, id := range s.listedModels(m.ID) {
		if seen[id] {
			continue
		}
		seen[id] = true
		mc := capabilities.Lookup(id)
		out.Models = append(out.Models, &llmgatewayv1.ModelCapabilities{
			Id: id, Tools: mc.Tools, StreamingTools: mc.Tools && mc.StreamingTools, ToolChoice: append([]string{}, mc.ToolChoice...),
		})
	}
	return out, nil
}

// listedModels are the models the capabilities answer lists: the default, the asked one,
// and the alias targets.
func (s *Service) listedModels(asked string) []string {
	targets := make([]string, 0, len(s.opts.Aliases))
	for _, id := range s.opts.Aliases {
		targets = append(targets, id)
	}
	slices.Sort(targets)
	return append([]string{s.opts.DefaultModel, asked}, targets...)
}
