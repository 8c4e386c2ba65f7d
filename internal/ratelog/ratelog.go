// Package ratelog spaces out warnings that a client or an outage can repeat without end
// (a store that is down fails every request; every distinct schema that does not compile
// is its own warning): one line at most every interval, and that line counts the ones
// held back since the last.
package ratelog

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Every is the least time between two lines of a Limiter made with New(0, …).
const Every = 10 * time.Second

// Limiter lets one warning through at most every interval. Safe for concurrent use; the
// zero value is not usable, use New.
type Limiter struct {
	every time.Duration
	count string // the field that counts the warnings a line stands for
	now   func() time.Time
	last  atomic.Int64 // when the last line went out, in Unix nanoseconds; 0 before the first
	held  atomic.Int64 // warnings held back since then, the one that goes out included
}

// New returns a Limiter of one line every interval (0: Every), whose lines count the
// warnings they stand for in the field count; now is its clock, nil is time.Now.
func New(every time.Duration, count string, now func() time.Time) *Limiter {
	if every <= 0 {
		every = Every
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{every: every, count: count, now: now}
}

// Warn logs msg with fields as a warning unless a line went out less than the interval
// ago; a line that goes out carries the Limiter's count field: the warnings since the
// last line, this one included. It reports whether the line went out.
func (l *Limiter) Warn(log *zap.Logger, msg string, fields ...zap.Field) bool {
	l.held.Add(1)
	now := l.now().UnixNano()
	last := l.last.Load()
	if last != 0 && now-last < int64(l.every) || !l.last.CompareAndSwap(last, now) {
		return false
	}
	log.Warn(msg, append(fields, zap.Int64(l.count, l.held.Swap(0)))...)
	return true
}
