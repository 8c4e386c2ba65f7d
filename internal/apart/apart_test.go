package apart

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

// TestMain: no worker outlives its idle time (goleak waits a while for goroutines to end).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunPanicsOnTheCaller: work that panics on its own goroutine panics on the caller's,
// where its recovery answers it, instead of ending the process.
func TestRunPanicsOnTheCaller(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "check failed", func() { Run(func() { panic("check failed") }) })
	ran := false
	assert.NotPanics(t, func() { Run(func() { ran = true }) })
	assert.True(t, ran, "what f wrote is the caller's once Run returns")
}

// TestRunReusesAWorker: work runs on a goroutine other than the caller's, and the next
// piece on the same one, whose stack has grown already; handing it over allocates nothing.
func TestRunReusesAWorker(t *testing.T) {
	var first, second string
	Run(func() { first = goroutineID() })
	Run(func() { second = goroutineID() })
	assert.NotEqual(t, goroutineID(), first, "the work ran on the caller's goroutine")
	assert.Equal(t, first, second, "the second piece of work ran on a new goroutine")
	assert.Zero(t, testing.AllocsPerRun(100, func() { Run(func() {}) }))
}

// goroutineID is the number runtime.Stack gives the calling goroutine.
func goroutineID() string {
	b := make([]byte, 64)
	return strings.Fields(string(b[:runtime.Stack(b, false)]))[1]
}
