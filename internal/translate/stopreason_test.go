package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// TestFinishReason is docs/BEDROCK.md D's table, one row per stop reason Bedrock reports.
func TestFinishReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stop         string
		finish       chat.FinishReason
		known, isErr bool
	}{
		{bedrock.StopEndTurn, chat.FinishStop, true, false},
		{bedrock.StopStopSequence, chat.FinishStop, true, false},
		{bedrock.StopToolUse, chat.FinishToolCalls, true, false},
		{bedrock.StopMaxTokens, chat.FinishLength, true, false},
		{bedrock.StopModelContextWindowExceeded, chat.FinishLength, true, false},
		{bedrock.StopGuardrailIntervened, chat.FinishContentFilter, true, false},
		{bedrock.StopContentFiltered, chat.FinishContentFilter, true, false},
		{bedrock.StopMalformedModelOutput, "", true, true},
		{bedrock.StopMalformedToolUse, "", true, true},
		{"some_future_reason", chat.FinishStop, false, false},
		{"", chat.FinishStop, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			t.Parallel()
			got, err := FinishReason(tt.stop)
			if tt.isErr {
				require.ErrorIs(t, err, fault.ErrUpstream)
				assert.Contains(t, err.Error(), tt.stop)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.finish, got)
			assert.Equal(t, tt.known, KnownStopReason(tt.stop))
		})
	}
}
