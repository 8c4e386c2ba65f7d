package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	llmgatewayv1 "github.com/nirmata/llm-gateway/gen/llmgateway/v1"
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
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
	Aliases  map[string]string
	MaxTools int
	// Simulated is true when Upstream is the embedded simulator.
	Simulated bool
}

// Service answers chat requests; the gRPC and REST transports both call it.
type Service struct {
	upstream Upstream
	opts     Options
	log      *zap.Logger
}

// NewService returns a Service calling upstream.
func NewService(upstream Upstream, opts Options, log *zap.Logger) *Service {
	return &Service{upstream: upstream, opts: opts, log: log}
}

// prepared is a request translated and ready for Bedrock.
type prepared struct {
	model    capabilities.Model
	converse *bedrock.ConverseRequest
	names    *translate.Names
}

// prepare checks what only the gateway knows (provider, limits, model) and translates.
func (s *Service) prepare(req *llmgatewayv1.ChatRequest) (*prepared, error) {
	if p := req.GetProvider(); p != "" && !strings.EqualFold(p, "bedrock") {
		return nil, fmt.Errorf("%w: provider %q is not supported; this gateway serves \"bedrock\"", translate.ErrInvalidRequest, p)
	}
	if n := len(req.GetTools()); n > s.opts.MaxTools {
		return nil, fmt.Errorf("%w: tools: %d tools given, at most %d are allowed", translate.ErrInvalidRequest, n, s.opts.MaxTools)
	}
	model := capabilities.Lookup(s.resolveModel(req.GetModel()))
	converse, names, err := translate.Request(req, model)
	if err != nil {
		return nil, err
	}
	return &prepared{model: model, converse: converse, names: names}, nil
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
	p, err := s.prepare(req)
	if err != nil {
		return nil, err
	}
	s.logRepairs(ctx, p.model.ID, p.names.Stats)
	answer, err := s.upstream.Converse(ctx, p.model.ID, p.converse)
	if err != nil {
		return nil, err
	}
	if !translate.KnownStopReason(answer.StopReason) {
		s.log.Warn("unknown Bedrock stop reason, answered as stop",
			zap.String("request_id", requestID(ctx)), zap.String("stop_reason", answer.StopReason))
	}
	resp, err := translate.Response(answer, p.names)
	if err != nil {
		return nil, err
	}
	resp.Metadata.Model = p.model.ID
	resp.Metadata.LatencyMs = int32(time.Since(start).Milliseconds())
	resp.Metadata.RequestId = requestID(ctx)
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
func (s *Service) Capabilities(model string) *llmgatewayv1.Capabilities {
	m := capabilities.Lookup(s.resolveModel(model))
	choices := []string{}
	if m.Tools {
		for _, kind := range []string{capabilities.ChoiceAuto, capabilities.ChoiceAny, capabilities.ChoiceTool} {
			if m.SupportsChoice(kind) {
				choices = append(choices, clientChoiceOf[kind])
			}
		}
		choices = append(choices, "none")
	}
	toolTypes := []string{}
	if m.Tools {
		toolTypes = append(toolTypes, "function")
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
	return out
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
