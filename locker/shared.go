package locker

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// stamp completes the mode of a lease granted to a waiting shared or
// permit acquire: its answer, or a hand-off's NOTIFY, names the slot's
// lease but not the key's mode.
func (w wanted) stamp(lease Lease, err error) (Lease, error) {
	if err != nil {
		return lease, err
	}
	switch {
	case w.permits > 0:
		lease.Mode, lease.Permits = ModeSemaphore, w.permits
	case w.shared:
		lease.Mode = ModeShared
	}
	return lease, nil
}

// tryShared makes one attempt at a holder's lease of g's one key: shared
// (any number of owners hold it at once, while nobody holds it
// exclusively), or one of its permits (at most that many hold it at once).
// Each holder's lease has its own token and TTL, which Renew, Keepalive,
// Release and Fence take as they take an exclusive one. Refused when an
// exclusive lease runs, every permit is taken, waiters are queued for the
// key (a writer waiting for readers is not overtaken), or its holders hold
// it in another mode or as a semaphore of other permits (a conflict).
// Permits live on the key: on a free key new permits take effect (an
// event records the change).
func (l *Locker) tryShared(ctx context.Context, db DBTX, want grant) (Lease, error) {
	key, permits := want.keys[0], want.want.permits
	sentAt := l.clock.Now()
	sctx, done := knownOutcome(ctx)
	g, found, err := store.TryGrantShared(sctx, db, l.grantParams(want, key), permits)
	done()
	if err != nil {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w", key, err)
	}
	if g.Granted() {
		lease := leaseFrom(g.LeaseRow, Outcome(g.Outcome), sentAt)
		lease.Mode, lease.Permits = g.Mode, g.Permits
		if ctx.Err() != nil {
			return Lease{}, l.giveBack(ctx, db, lease)
		}
		return lease, nil
	}
	if found && g.Outcome == lockdb.OutcomeConflict {
		return Lease{}, &Error{Kind: ErrHeld, Key: key, Mode: g.Mode, Permits: g.Permits, Holders: g.Holders, Conflict: true, want: permits}
	}
	e, ok := heldError(g.Grant, found).(*Error)
	if ok {
		e.Mode, e.Permits, e.Holders = g.Mode, g.Permits, g.Holders
		return Lease{}, e
	}
	return Lease{}, heldError(g.Grant, found)
}
