package locker

import (
	"context"
	"time"
)

// outcomeGrace is how long a statement already on its way may run past the
// end of the caller's context. Cutting it off the moment ctx ends would
// leave its outcome unknown: a grant could commit with nobody told its
// token, holding the key until its TTL, and a waiter record could stay with
// nobody to remove it.
const outcomeGrace = 2 * time.Second

// knownOutcome returns a context for a statement whose result the caller
// must learn: it carries ctx's values, and ends outcomeGrace after ctx ends
// (by cancellation or deadline), so a frozen database still cannot hold the
// caller for long. Call the returned function when the statement is done.
func knownOutcome(ctx context.Context) (context.Context, func()) {
	if ctx.Done() == nil {
		return ctx, func() {}
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(outcomeGrace, cancel) })
	return sctx, func() {
		stop()
		cancel()
	}
}
