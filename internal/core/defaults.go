package core

import (
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// AliasDefaults are an alias's defaults (docs/PROTOCOL.md 14.1) for a request naming it
// that does not set the field itself: the request's own value wins, then its key's
// (KeyPolicy), then the alias's, then the gateway's. Nil and empty leave the gateway's.
type AliasDefaults struct {
	// PromptCaching: true adds automatic prompt-cache points (auto), false adds none
	// (off).
	PromptCaching     *bool
	ParallelToolCalls *bool
	MaxToolRounds     *int32
	ReasoningEffort   string
	// ToolValidation is off, report or repair; "" leaves the gateway's.
	ToolValidation string
}

// applyDefaults fills the fields req leaves unset from the defaults of its key, then of
// the alias it names (name, the model as the client gave it or the default model), then
// the gateway's, and returns the translation's options and the request's tool_validation
// mode.
func (s *Service) applyDefaults(req *chat.Request, name string) (translate.Options, string, error) {
	d := s.opts.AliasDefaults[name]
	if k := s.keys[req.KeyID]; k != nil {
		d = k.over(d)
	}
	if req.ParallelToolCalls == nil {
		switch {
		case d.ParallelToolCalls != nil:
			req.ParallelToolCalls = new(*d.ParallelToolCalls)
		case s.opts.NoParallelToolCalls:
			req.ParallelToolCalls = new(false)
		}
	}
	if req.MaxToolRounds == nil && d.MaxToolRounds != nil {
		req.MaxToolRounds = new(*d.MaxToolRounds)
	}
	auto := !s.opts.NoPromptCaching
	if d.PromptCaching != nil {
		auto = *d.PromptCaching
	}
	mode, err := s.validationMode(req, d)
	return translate.Options{NoAutoCache: !auto, ReasoningEffort: d.ReasoningEffort}, mode, err
}
