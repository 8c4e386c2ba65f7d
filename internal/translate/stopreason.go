package translate

import (
	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
)

// finishReasons is docs/BEDROCK.md D's table; the malformed_* reasons are errors, not finishes.
var finishReasons = map[string]chat.FinishReason{
	bedrock.StopEndTurn:                    chat.FinishStop,
	bedrock.StopStopSequence:               chat.FinishStop,
	bedrock.StopToolUse:                    chat.FinishToolCalls,
	bedrock.StopMaxTokens:                  chat.FinishLength,
	bedrock.StopModelContextWindowExceeded: chat.FinishLength,
	bedrock.StopGuardrailIntervened:        chat.FinishContentFilter,
	bedrock.StopContentFiltered:            chat.FinishContentFilter,
}

// FinishReason maps Bedrock's stopReason to finish_reason. malformed_model_output and
// malformed_tool_use are errors wrapping fault.ErrUpstream: the model produced something unusable
// and the client should retry. A reason Bedrock adds later maps to "stop"; the caller should
// log it (see KnownStopReason).
func FinishReason(stopReason string) (chat.FinishReason, error) {
	switch stopReason {
	case bedrock.StopMalformedModelOutput:
		return "", upstreamf("the model produced output Bedrock could not parse (stop reason %s); retry the request", stopReason)
	case bedrock.StopMalformedToolUse:
		return "", upstreamf("the model produced an invalid tool call (stop reason %s); retry the request, or simplify the tool schemas", stopReason)
	}
	if f, ok := finishReasons[stopReason]; ok {
		return f, nil
	}
	return chat.FinishStop, nil
}

// KnownStopReason reports whether FinishReason knows the stop reason, so the caller can log
// the ones it maps to "stop" by default.
func KnownStopReason(stopReason string) bool {
	_, ok := finishReasons[stopReason]
	return ok || stopReason == bedrock.StopMalformedModelOutput || stopReason == bedrock.StopMalformedToolUse
}
