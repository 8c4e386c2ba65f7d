package translate

import "github.com/nirmata/llm-gateway/internal/bedrock"

// Finish reasons of the normalized protocol (docs/PROTOCOL.md 3.1).
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// finishReasons is docs/BEDROCK.md D's table; the malformed_* reasons are errors, not finishes.
var finishReasons = map[string]string{
	bedrock.StopEndTurn:                    FinishStop,
	bedrock.StopStopSequence:               FinishStop,
	bedrock.StopToolUse:                    FinishToolCalls,
	bedrock.StopMaxTokens:                  FinishLength,
	bedrock.StopModelContextWindowExceeded: FinishLength,
	bedrock.StopGuardrailIntervened:        FinishContentFilter,
	bedrock.StopContentFiltered:            FinishContentFilter,
}

// FinishReason maps Bedrock's stopReason to finish_reason. malformed_model_output and
// malformed_tool_use are errors wrapping ErrUpstream: the model produced something unusable
// and the client should retry. A reason Bedrock adds later maps to "stop"; the caller should
// log it (see KnownStopReason).
func FinishReason(stopReason string) (finish string, err error) {
	switch stopReason {
	case bedrock.StopMalformedModelOutput:
		return "", upstreamf("the model produced output Bedrock could not parse (stop reason %s); retry the request", stopReason)
	case bedrock.StopMalformedToolUse:
		return "", upstreamf("the model produced an invalid tool call (stop reason %s); retry the request, or simplify the tool schemas", stopReason)
	}
	if f, ok := finishReasons[stopReason]; ok {
		return f, nil
	}
	return FinishStop, nil
}

// KnownStopReason reports whether FinishReason knows the stop reason, so the caller can log
// the ones it maps to "stop" by default.
func KnownStopReason(stopReason string) bool {
	_, ok := finishReasons[stopReason]
	return ok || stopReason == bedrock.StopMalformedModelOutput || stopReason == bedrock.StopMalformedToolUse
}
