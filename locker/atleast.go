package locker

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/store"
)

// holdAtLeast keeps each of leases' keys at least g.atLeast from its grant
// (distributed_lock_hold_at_least), so that a Release sooner keeps the key
// until then. It runs in db, the caller's transaction if it is one. A
// lease that could not be held so is no lease for the caller to run its
// job under: the leases the call granted are given back (releaseFresh),
// and the error says why.
func (l *Locker) holdAtLeast(ctx context.Context, db DBTX, g grant, leases []Lease) error {
	if g.atLeast == 0 {
		return nil
	}
	for _, lease := range leases {
		_, ok, err := store.HoldAtLeast(ctx, db, lease.ref(), g.atLeast)
		if err == nil && !ok {
			err = notHeld(ctx, db, lease.Key, lease.Owner, lease.Token)
		}
		if err != nil {
			l.releaseFresh(ctx, db, leases)
			return fmt.Errorf("locker: hold %q at least %s: %w", lease.Key, g.atLeast, err)
		}
	}
	return nil
}
