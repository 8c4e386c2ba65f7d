package anthropic

import (
	"net/http"

	"github.com/nirmata/llm-gateway/internal/observe"
)

// headerEstimate says count_tokens' answer is the gateway's estimate, not Bedrock's count
// (docs/PROTOCOL.md 15.4).
const headerEstimate = "X-Gateway-Estimate"

type tokenCount struct {
	InputTokens int `json:"input_tokens"`
}

// CountTokens serves POST /v1/messages/count_tokens: the input tokens of the request as
// it would be translated, by Bedrock's CountTokens where the model has it, else estimated.
func (h *Handler) CountTokens(rw http.ResponseWriter, r *http.Request, call *observe.Call) error {
	w := named(rw)
	c, err := h.read(w, r, call, true)
	if err != nil {
		return err
	}
	n, estimated, res, err := h.svc.CountTokens(r.Context(), c.req)
	call.Result = res
	if err != nil {
		return c.paths.rewrite(err)
	}
	w.Name(res.Ignored)
	if estimated {
		w.Header().Set(headerEstimate, "true")
	}
	writeJSON(w, &tokenCount{InputTokens: n})
	return nil
}
