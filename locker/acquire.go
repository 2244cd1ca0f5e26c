package locker

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/store"
)

// TryAcquire makes one attempt to take key for owner, in one statement on
// db (a pool, a connection, or the caller's transaction: the grant then
// commits or rolls back with it; use READ COMMITTED there).
//
// It returns a Lease whose Outcome is Acquired, Stolen or Renewed (owner
// already held it: same token, new expiry), or a *HeldError (errors.Is
// ErrHeld) naming the holder.
func (l *Locker) TryAcquire(ctx context.Context, db store.DBTX, key, owner string) (Lease, error) {
	return l.tryAcquire(ctx, db, key, owner, nil)
}

// changedRetries bounds re-attempts when the key changes between a refused
// grant and reading its holder (it was released or expired in between).
const changedRetries = 3

func (l *Locker) tryAcquire(ctx context.Context, db store.DBTX, key, owner string, detail []byte) (Lease, error) {
	if err := ValidateKey(key); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire: %w", err)
	}
	if err := ValidateOwner(owner); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w", key, err)
	}
	params := store.GrantParams{
		Key: key, Owner: owner, TTL: l.cfg.TTL, Metadata: l.metadata,
		Actor: l.ownerActor(owner), Detail: detail, LogAcquired: l.cfg.LogGrants,
	}
	var last store.Grant
	for range changedRetries {
		sentAt := time.Now()
		g, found, err := store.TryGrant(ctx, db, params)
		if err != nil {
			return Lease{}, fmt.Errorf("locker: acquire %q: %w", key, err)
		}
		if g.Granted() {
			return leaseFrom(g.LeaseRow, Outcome(g.Outcome), sentAt), nil
		}
		if found && g.Outcome == store.OutcomeHeld {
			return Lease{}, &HeldError{Key: key, Owner: g.Owner, Token: g.Token,
				ExpiresAt: g.ExpiresAt, Remaining: g.Remaining}
		}
		// Free or expired, but another transaction was changing the row (or
		// creating it) right then: the attempt does not wait for it; try
		// again.
		if found {
			last = g
		}
	}
	// Every attempt found the row being changed by another transaction:
	// under this much contention the key is, for the caller's purposes,
	// held. last is the latest row read; its holder may already have moved
	// on.
	return Lease{}, &HeldError{Key: key, Owner: last.Owner, Token: last.Token,
		ExpiresAt: last.ExpiresAt, Remaining: max(0, last.Remaining)}
}
