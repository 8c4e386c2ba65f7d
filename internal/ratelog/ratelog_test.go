package ratelog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nirmata/llm-gateway/internal/clocktest"
)

// One line per interval, each counting the warnings since the last one.
func TestOneLinePerInterval(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	core, logs := observer.New(zap.WarnLevel)
	log := zap.New(core)
	l := New(time.Second, "occurrences", clock.Now)
	require.True(t, l.Warn(log, "w", zap.String("k", "v")))
	for range 5 {
		require.False(t, l.Warn(log, "w"))
	}
	require.Equal(t, 1, logs.Len())
	clock.Advance(time.Second)
	require.True(t, l.Warn(log, "w"))
	lines := logs.All()
	require.Len(t, lines, 2)
	require.EqualValues(t, 1, lines[0].ContextMap()["occurrences"])
	require.Equal(t, "v", lines[0].ContextMap()["k"])
	require.EqualValues(t, 6, lines[1].ContextMap()["occurrences"], "the five held back and this one")
}
