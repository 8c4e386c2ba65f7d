package core

import (
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/toolguard"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// Defaults are the defaults a key and an alias both set (docs/PROTOCOL.md 14.1) for a
// request that does not set the field itself: the request's own value wins, then its
// key's (Options.KeyDefaults), then its alias's, then the gateway's. Nil and empty leave the next
// one's.
type Defaults struct {
	ParallelToolCalls *bool
	MaxToolRounds     *int32
	ReasoningEffort   string
	// ToolValidation is off, report or repair; "" leaves the next one's.
	ToolValidation string
}

// over is base with the fields d sets put over it.
func (d Defaults) over(base Defaults) Defaults {
	if d.ParallelToolCalls != nil {
		base.ParallelToolCalls = d.ParallelToolCalls
	}
	if d.MaxToolRounds != nil {
		base.MaxToolRounds = d.MaxToolRounds
	}
	if d.ReasoningEffort != "" {
		base.ReasoningEffort = d.ReasoningEffort
	}
	if d.ToolValidation != "" {
		base.ToolValidation = d.ToolValidation
	}
	return base
}

// AliasDefaults are an alias's defaults: the ones keys take too, and prompt caching.
type AliasDefaults struct {
	// PromptCaching: true adds automatic prompt-cache points (auto), false adds none
	// (off); nil leaves the gateway's.
	PromptCaching *bool
	Defaults
}

// applyDefaults fills the fields req leaves unset from the defaults of its key, then of
// the alias it names (name, the model as the client gave it or the default model), then
// the gateway's, and returns the translation's options and how the request's tool calls
// are checked.
func (s *Service) applyDefaults(req *chat.Request, name string) (translate.Options, toolguard.Mode, error) {
	d := s.opts.AliasDefaults[name]
	if k, ok := s.opts.KeyDefaults[req.KeyID]; ok {
		d.Defaults = k.over(d.Defaults)
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
	v, err := s.guard.Mode(req, d.ToolValidation)
	return translate.Options{NoAutoCache: !auto, ReasoningEffort: d.ReasoningEffort}, v, err
}
