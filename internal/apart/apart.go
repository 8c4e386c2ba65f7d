// Package apart runs a deep piece of work on a goroutine of its own. A goroutine's stack
// keeps the size its deepest call needed for as long as the goroutine lives, and a
// stream's relay (httpx.Serve) lives as long as the stream is open: a step much deeper
// than relaying that it takes now and then (checking a tool call, encoding a whole output
// item) would cost every open stream that much more memory for the rest of its life.
//
// The goroutines are workers, each kept for a moment after its work for the next piece:
// a new goroutine's stack starts small and is copied each time the work needs it doubled,
// which for decoding and translating a request (some 16 KiB deep) cost 5% of a unary
// call's CPU; a worker's stack has grown already. A worker waiting for work uses too
// little of its stack to keep it through a collection, which halves it.
package apart

import (
	"sync"
	"sync/atomic"
	"time"
)

// A worker waits idleFor for its next piece of work before it ends; no more than maxIdle
// wait at once, the others end at once. The bound is for a burst of streams opening
// (each stream's start runs here, waiting for its first event): without it each of a
// thousand would keep its 16-32 KiB of stack for a while after, where the streams'
// relays could have used that memory.
const (
	idleFor = 100 * time.Millisecond
	maxIdle = 16
)

// job is one Run's work, and what its worker reports back: f's panic (nil when it
// returned), and on done that f is over.
type job struct {
	f    func()
	p    any
	done chan struct{}
}

var (
	// work hands a job to a worker waiting for one: a send succeeds only when one waits.
	work = make(chan *job)
	// jobs keeps the jobs of the Runs that returned, for the next ones.
	jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}
	// idle counts the workers waiting for work.
	idle atomic.Int32
)

// Run runs f on a goroutine of its own, a worker waiting for work or else a new one, and
// waits for it to return; a panic of f is raised again on the caller's goroutine, as if f
// had run there. What f writes is the caller's to read once Run returns.
func Run(f func()) {
	j := jobs.Get().(*job)
	j.f = f
	select {
	case work <- j:
	default:
		go worker(j)
	}
	<-j.done
	p := j.p
	j.f, j.p = nil, nil
	jobs.Put(j)
	if p != nil {
		panic(p)
	}
}

// worker runs j, then each job it is handed, until none comes for idleFor, or until it
// finds maxIdle workers waiting already.
func worker(j *job) {
	timer := time.NewTimer(idleFor)
	defer timer.Stop()
	for {
		j.run()
		if idle.Add(1) > maxIdle {
			idle.Add(-1)
			return
		}
		timer.Reset(idleFor)
		select {
		case j = <-work:
			idle.Add(-1)
		case <-timer.C:
			idle.Add(-1)
			return
		}
	}
}

func (j *job) run() {
	defer func() {
		j.p = recover()
		j.done <- struct{}{}
	}()
	j.f()
}
