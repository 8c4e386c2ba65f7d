package apart

import (
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain: no worker outlives its idle time (goleak waits a while for goroutines to end).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunPanicsOnTheCaller: work that panics on its own goroutine panics on the caller's,
// where its recovery answers it, instead of ending the process.
func TestRunPanicsOnTheCaller(t *testing.T) {
	assert.PanicsWithValue(t, "check failed", func() { Run(func() { panic("check failed") }) })
	ran := false
	assert.NotPanics(t, func() { Run(func() { ran = true }) })
	assert.True(t, ran, "what f wrote is the caller's once Run returns")
}

// TestRunReusesAWorker: work runs on a goroutine other than the caller's, and the next
// piece on a worker that waited for it, whose stack has grown already; handing it over
// allocates nothing.
func TestRunReusesAWorker(t *testing.T) {
	var first, second string
	Run(func() { first = goroutineID() })
	assert.NotEqual(t, goroutineID(), first, "the work ran on the caller's goroutine")
	waiting := settled(t)
	require.NotEmpty(t, waiting, "no worker waits for work")
	Run(func() { second = goroutineID() })
	assert.Contains(t, waiting, second, "the second piece of work ran on a new goroutine")
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
	assert.LessOrEqual(t, len(settled(t)), maxIdle, "workers left after a burst of %d", burst)
}

// settled waits until every worker waits for work (each of the others has ended), and
// returns their goroutines' numbers.
func settled(t *testing.T) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, waiting := workers()
		if n == len(waiting) {
			return waiting
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers, %d of them waiting for work", n, len(waiting))
		}
		runtime.Gosched()
	}
}

// workers counts the goroutines running worker, and numbers those waiting for work.
func workers() (n int, waiting []string) {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "internal/apart.worker(") {
			n++
			if f := strings.Fields(g); len(f) > 2 && strings.HasPrefix(f[2], "[select") {
				waiting = append(waiting, f[1])
			}
		}
	}
	return n, waiting
}
