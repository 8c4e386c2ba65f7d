// Package clocktest is a clock for tests of what depends on time (windows, TTLs, warnings
// spaced in time): it stands still until the test moves it, so no test sleeps for it.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a settable time, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock standing at now.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time: pass the method where a func() time.Time is wanted.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
