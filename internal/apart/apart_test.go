package apart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunPanicsOnTheCaller: work that panics on its own goroutine panics on the caller's,
// where its recovery answers it, instead of ending the process.
func TestRunPanicsOnTheCaller(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "check failed", func() { Run(func() { panic("check failed") }) })
	ran := false
	assert.NotPanics(t, func() { Run(func() { ran = true }) })
	assert.True(t, ran, "what f wrote is the caller's once Run returns")
}
