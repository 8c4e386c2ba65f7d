package translate

import (
	"slices"
	"strings"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// topK puts a request's top_k where the model's family takes it, in
// additionalModelRequestFields (docs/BEDROCK.md A21): Claude's top_k, Nova's
// inferenceConfig.topK. With Claude's thinking on, on the Claude models that take no
// sampling parameters (G11), and on every other family, it is dropped and listed as
// ignored.
func (th *thinking) topK(req *chat.Request, model capabilities.Model, names *Plan) error {
	k := req.TopK
	if k == nil {
		return nil
	}
	if *k < 0 {
		return invalidf("top_k must be at least 0, got %d", *k)
	}
	switch {
	case strings.HasPrefix(model.Family, "anthropic.") && !th.noSampling(model):
		th.fields.TopK = ptr(*k)
	case strings.HasPrefix(model.Family, "amazon.nova-"):
		th.fields.NovaInference = &novaInference{TopK: *k}
	default:
		names.Ignored = append(names.Ignored, "top_k")
	}
	return nil
}

// betas forwards the request's anthropic-beta values the model takes
// (capabilities.TakesBeta) as additionalModelRequestFields.anthropic_beta, once each; the
// others are listed as ignored, "anthropic-beta: <value>".
func (th *thinking) betas(req *chat.Request, model capabilities.Model, names *Plan) {
	for _, b := range req.Betas {
		switch {
		case slices.Contains(th.fields.AnthropicBeta, b):
		case capabilities.TakesBeta(model, b):
			th.fields.AnthropicBeta = append(th.fields.AnthropicBeta, b)
		default:
			names.Ignored = append(names.Ignored, "anthropic-beta: "+b)
		}
	}
}
