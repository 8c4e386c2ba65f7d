package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/bedrock"
)

// TestFinishReason is docs/BEDROCK.md D's table, one row per stop reason Bedrock reports.
func TestFinishReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stop, finish string
		known, isErr bool
	}{
		{bedrock.StopEndTurn, FinishStop, true, false},
		{bedrock.StopStopSequence, FinishStop, true, false},
		{bedrock.StopToolUse, FinishToolCalls, true, false},
		{bedrock.StopMaxTokens, FinishLength, true, false},
		{bedrock.StopModelContextWindowExceeded, FinishLength, true, false},
		{bedrock.StopGuardrailIntervened, FinishContentFilter, true, false},
		{bedrock.StopContentFiltered, FinishContentFilter, true, false},
		{bedrock.StopMalformedModelOutput, "", true, true},
		{bedrock.StopMalformedToolUse, "", true, true},
		{"some_future_reason", FinishStop, false, false},
		{"", FinishStop, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			t.Parallel()
			got, err := FinishReason(tt.stop)
			if tt.isErr {
				require.ErrorIs(t, err, ErrUpstream)
				assert.Contains(t, err.Error(), tt.stop)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.finish, got)
			assert.Equal(t, tt.known, KnownStopReason(tt.stop))
		})
	}
}
