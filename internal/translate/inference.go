package translate

import (
	"fmt"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// inference maps max_tokens, temperature, top_p and stop (rule 20); nil when none is set.
// Empty stop sequences are dropped, and on models that refuse them, those of only
// whitespace, which are listed as ignored.
func inference(req *chat.Request, model capabilities.Model, names *Names) (*bedrock.InferenceConfig, error) {
	stats := &names.Stats
	var c bedrock.InferenceConfig
	set := false
	if req.MaxTokens != nil {
		if *req.MaxTokens < 1 {
			return nil, invalidf("max_tokens must be at least 1, got %d", *req.MaxTokens)
		}
		c.MaxTokens, set = ptr(*req.MaxTokens), true
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
