package apart

import (
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestBurstKeepsFewWorkers: after a burst of work running at once (streams opening), no
// more than maxIdle workers wait for more; the others end at once, rather than keep their
// stacks for idleFor.
func TestBurstKeepsFewWorkers(t *testing.T) {
	const burst = 4 * maxIdle
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(burst)
	done.Add(burst)
	for range burst {
		go func() {
			defer done.Done()
			Run(func() {
				started.Done()
				<-release
			})
		}()
	}
	started.Wait() // burst workers, each holding a piece of work
	close(release)
	done.Wait()
	// Once every worker left waits for work (each of the others has ended), count them.
	deadline := time.Now().Add(5 * time.Second)
	n, waiting := workers()
	for n != waiting && time.Now().Before(deadline) {
		runtime.Gosched()
		n, waiting = workers()
	}
	assert.LessOrEqual(t, n, maxIdle, "workers left after a burst of %d", burst)
}

// workers counts the goroutines running worker, and those of them waiting for work.
func workers() (n, waiting int) {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "internal/apart.worker(") {
			n++
			if strings.Contains(g, " [select") {
				waiting++
			}
		}
	}
	return n, waiting
}
