package bedrocksim

import (
	"errors"
	"io"
	"net/http"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// countTokensModels are the foundation models whose tokens CountTokens counts (AWS's
// CountTokens page: Claude 3.5 Haiku, 3.5 Sonnet v2, 3.7 Sonnet, Sonnet 4 and 4.5, Haiku
// 4.5, Opus 4, 4.1 and 4.5). Bedrock counts for foundation-model ids only: an inference
// profile's id, though it names one of these, is refused as a model that counts nothing.
var countTokensModels = []string{
	"anthropic.claude-3-5-haiku-20241022-v1:0",
	"anthropic.claude-3-5-sonnet-20241022-v2:0",
	"anthropic.claude-3-7-sonnet-20250219-v1:0",
	"anthropic.claude-sonnet-4-20250514-v1:0",
	"anthropic.claude-opus-4-20250514-v1:0",
	"anthropic.claude-opus-4-1-20250805-v1:0",
	"anthropic.claude-sonnet-4-5-20250929-v1:0",
	"anthropic.claude-haiku-4-5-20251001-v1:0",
	"anthropic.claude-opus-4-5-20251101-v1:0",
}

// countTokensBody is CountTokens' body; the simulator counts Converse inputs only.
type countTokensBody struct {
	Input struct {
		Converse    jsontext.Value `json:"converse"`
		InvokeModel jsontext.Value `json:"invokeModel"`
	} `json:"input"`
}

// serveCountTokens answers POST /model/{modelId}/count-tokens: the input's tokens by the
// estimate every answer's usage takes (a quarter of its bytes), so the count is
// deterministic; Converse's shape rules hold for the input (decodeRequest).
func (s *Server) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	setRequestID(w)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, validation("Malformed input request: the request body is too large, reformat your input and try again."))
		}
		return // the client went away
	}
	if !authorized(r.Header.Get("Authorization")) {
		writeError(w, &apiError{Code: codeAccessDenied, Status: http.StatusForbidden,
			Message: "Missing or malformed Authorization header: expected a SigV4 signature (AWS4-HMAC-SHA256) or a Bedrock API key (Bearer)."})
		return
	}
	id := r.PathValue("modelId")
	if _, found := lookupModel(id); !found {
		writeError(w, modelNotFound())
		return
	}
	if !slices.Contains(countTokensModels, id) {
		writeError(w, validation("The provided model doesn't support counting tokens."))
		return
	}
	var in countTokensBody
	if err := json.Unmarshal(body, &in, lenient); err != nil {
		writeError(w, malformedJSON(err))
		return
	}
	switch {
	case len(in.Input.Converse) > 0 && len(in.Input.InvokeModel) > 0:
		writeError(w, memberCount("#/input", 2))
		return
	case len(in.Input.Converse) == 0:
		writeError(w, validation("Malformed input request: #/input: required key [converse] not found, reformat your input and try again."))
		return
	}
	if _, apiErr := decodeRequest(in.Input.Converse); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(marshal(struct {
		InputTokens int32 `json:"inputTokens"`
	}{tokens(len(in.Input.Converse))}))
}
