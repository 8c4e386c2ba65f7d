package bedrocksim

import (
	"fmt"
	"strings"
)

// maxOutputs are the most tokens each model writes in one answer, the largest maxTokens it
// takes: Anthropic's models overview for Claude (3.7 Sonnet writes 128,000 with the
// output-128k beta), the Nova request schema's 1 to 5,000 for Nova but Premier. Models
// missing here are not checked.
var maxOutputs = map[string]int32{
	"anthropic.claude-3-haiku-20240307-v1:0":    4096,
	"anthropic.claude-3-sonnet-20240229-v1:0":   4096,
	"anthropic.claude-3-opus-20240229-v1:0":     4096,
	"anthropic.claude-3-5-sonnet-20240620-v1:0": 8192,
	"anthropic.claude-3-5-haiku-20241022-v1:0":  8192,
	"anthropic.claude-3-5-sonnet-20241022-v2:0": 8192,
	"anthropic.claude-3-7-sonnet-20250219-v1:0": 64000,
	"anthropic.claude-sonnet-4-20250514-v1:0":   64000,
	"anthropic.claude-opus-4-20250514-v1:0":     32000,
	"anthropic.claude-opus-4-1-20250805-v1:0":   32000,
	"anthropic.claude-sonnet-4-5-20250929-v1:0": 64000,
	"anthropic.claude-haiku-4-5-20251001-v1:0":  64000,
	"anthropic.claude-opus-4-5-20251101-v1:0":   64000,
	"anthropic.claude-opus-4-6-v1":              128000,
	"anthropic.claude-sonnet-4-6":               64000,
	"anthropic.claude-opus-4-7":                 128000,
	"anthropic.claude-opus-5-5":                 128000,
	"anthropic.claude-sonnet-5-5":               128000,
	"anthropic.claude-haiku-5-5":                128000,
	"amazon.nova-micro-v1:0":                    5000,
	"amazon.nova-lite-v1:0":                     5000,
	"amazon.nova-pro-v1:0":                      5000,
	"amazon.nova-2-lite-v1:0":                   5000,
}

// output128kBeta lifts 3.7 Sonnet's maximum output to 128,000 tokens.
const output128kBeta = "output-128k-2025-02-19"

// checkMaxTokens refuses a maxTokens above the model's maximum output: Claude's validator
// relays its own 400, the other models answer Converse's own text (the simulator's words for
// both).
func checkMaxTokens(m ModelInfo, req *converseRequest) *apiError {
	most, known := maxOutputs[m.ID]
	ic := req.InferenceConfig
	if !known || ic == nil || ic.MaxTokens == nil || *ic.MaxTokens <= most {
		return nil
	}
	n := *ic.MaxTokens
	if !isAnthropic(m) {
		return validation(fmt.Sprintf("The maximum tokens you requested exceeds the model limit of %d. Try again with a maximum tokens value that is lower than %d.", most, most))
	}
	if strings.HasPrefix(m.ID, "anthropic.claude-3-7-sonnet") && hasBeta(req, output128kBeta) && n <= 128000 {
		return nil
	}
	return modelError(fmt.Sprintf("max_tokens: %d > %d, which is the maximum allowed number of output tokens for %s", n, most, strings.TrimPrefix(m.ID, "anthropic.")))
}

// hasBeta reports whether additionalModelRequestFields.anthropic_beta lists beta.
func hasBeta(req *converseRequest, beta string) bool {
	fields, _ := objectMembers(req.AdditionalModelRequestFields)
	betas, _ := lookup(fields, "anthropic_beta")
	elems, _ := arrayElements(betas)
	for _, e := range elems {
		if s, _ := stringValue(e); s == beta {
			return true
		}
	}
	return false
}
