package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrBudgetSpent is the error of a call made after its request's budget for the store
// (WithBudget) was spent: it is not sent.
var ErrBudgetSpent = errors.New("shared store skipped: the request's time for it is spent")

// budgetKey holds a request's *budget in its context.
type budgetKey struct{}

// budget is what remains of one request's time for the store, shared by the calls the
// request makes, which may overlap (a stream's last calls).
type budget struct{ left atomic.Int64 } // a time.Duration

// WithBudget returns ctx with a budget of d for every store call made under it, together
// (docs/PROTOCOL.md 14.3): each call the Guard passes on is bounded by what is left, and
// spends what it took; once nothing is left, the calls fail at once with ErrBudgetSpent.
// So a slow store costs a request d in all, however many calls it makes (a reservation,
// an affinity read, a reasoning read, the writes of its answer, its settlement). d <= 0
// sets none: each call has the store's own timeout only.
func WithBudget(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	b := &budget{}
	b.left.Store(int64(d))
	return context.WithValue(ctx, budgetKey{}, b)
}

// spend bounds one call by what is left of ctx's budget. It returns the call's context
// and done, to call when the call has returned, which spends the time it took; or
// ErrBudgetSpent when nothing is left. Without a budget ctx is returned as it is.
func spend(ctx context.Context) (context.Context, func(), error) {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	if b == nil {
		return ctx, func() {}, nil
	}
	left := time.Duration(b.left.Load())
	if left <= 0 {
		return nil, nil, ErrBudgetSpent
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, left)
	return ctx, func() {
		cancel()
		b.left.Add(-int64(time.Since(start)))
	}, nil
}
