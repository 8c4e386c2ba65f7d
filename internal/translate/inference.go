package translate

import (
	"fmt"
	"math"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// DefaultMaxTokens is default_max_tokens' default (docs/PROTOCOL.md 14.5).
const DefaultMaxTokens = 4096

// thinkingAllowance stands in for the answer's allowance beside a thinking budget when
// default_max_tokens is 0: the budget needs room above it (docs/PROTOCOL.md 14.5).
const thinkingAllowance = 4096

// maxTokens is the maxTokens a request is sent, 0 for none (docs/PROTOCOL.md 14.5, 11.1):
// the answer's allowance plus the thinking budget. The allowance is the request's
// max_tokens, else defaultMax (default_max_tokens) capped at the model's maximum output
// where the capability table knows it, so a default never turns a working request into a
// 400; beside a budget, thinkingAllowance when there is neither. Bedrock reserves quota
// for maxTokens as a call starts, so sending none (the model's maximum) costs throughput.
func maxTokens(req *chat.Request, model capabilities.Model, defaultMax, budget int32) int32 {
	allowance := defaultMax
	if most := model.MaxOutput; most > 0 && allowance > most {
		allowance = most
	}
	if req.MaxTokens != nil {
		allowance = *req.MaxTokens
	}
	if allowance == 0 && budget > 0 {
		allowance = thinkingAllowance
	}
	// A client's max_tokens may be as large as an int32 holds; the sum must not wrap.
	n := min(allowance, math.MaxInt32-budget) + budget
	if most := model.MaxOutput; most > 0 && n > most {
		// Never past the model's maximum output, which Bedrock refuses: clients ask for
		// what another model takes (Claude Code's max_tokens 32,000 on Nova), and the
		// budget comes on top of the allowance (Claude Code's 31,999 beside it on Opus
		// 4.1, whose maximum is 32,000); the budget is lowered below it (applyInference).
		n = most
	}
	return n
}

// inference maps temperature, top_p and stop (rule 20), and checks max_tokens, whose
// maxTokens applyInference sets; nil when none is set. Empty stop sequences are dropped,
// and on models that refuse them, those of only whitespace, which are listed as ignored.
func inference(req *chat.Request, model capabilities.Model, names *Plan) (*bedrock.InferenceConfig, error) {
	stats := &names.Stats
	var c bedrock.InferenceConfig
	set := false
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return nil, invalidf("max_tokens must be at least 1, got %d", *req.MaxTokens)
	}
	if req.Temperature != nil {
		if v := *req.Temperature; !(v >= 0 && v <= 1) {
			return nil, invalidf("temperature must be between 0 and 1 on Bedrock, got %v", v)
		}
		c.Temperature, set = ptr(*req.Temperature), true
	}
	if req.TopP != nil {
		if v := *req.TopP; !(v >= 0 && v <= 1) {
			return nil, invalidf("top_p must be between 0 and 1, got %v", v)
		}
		if c.Temperature != nil && model.NoTemperatureWithTopP {
			// The model refuses both; temperature is the one clients tune on purpose.
			stats.DroppedTopP = true
			names.Ignored = append(names.Ignored, "top_p")
		} else {
			c.TopP, set = ptr(*req.TopP), true
		}
	}
	for i, s := range req.Stop {
		switch {
		case s == "":
		case model.NoBlankStop && isBlank(s):
			names.Ignored = append(names.Ignored, fmt.Sprintf("stop[%d]", i))
		default:
			c.StopSequences = append(c.StopSequences, s)
			set = true
		}
	}
	if !set {
		return nil, nil
	}
	return &c, nil
}
