//go:build !anthcore

package anthropic

import (
	"errors"
	"net/http"

	"github.com/nirmata/llm-gateway/internal/observe"
)

// CountTokens is a placeholder until anth-core's core.Service.CountTokens is merged.
func (h *Handler) CountTokens(w http.ResponseWriter, r *http.Request, call *observe.Call) error {
	return errors.New("count_tokens is not built yet")
}
