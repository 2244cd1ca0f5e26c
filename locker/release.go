package locker

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Renew extends lease by its TTL (the Locker's TTL when lease.TTL is zero)
// from the database's now. It succeeds only while lease is the current,
// unexpired grant: owner and token must both match. Otherwise it returns a
// *NotHeldError (errors.Is ErrNotHeld) with the key's current row.
func (l *Locker) Renew(ctx context.Context, db DBTX, lease Lease) (Lease, error) {
	if err := validLease(lease); err != nil {
		return Lease{}, fmt.Errorf("locker: renew: %w", err)
	}
	ttl := lease.TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	if err := validTTL(ttl); err != nil {
		return Lease{}, fmt.Errorf("locker: renew %q: %w", lease.Key, err)
	}
	l.claims.settle(lease.ref()) // this renewal is the claim of a handed-off lease
	sentAt := l.clock.Now()
	row, ok, err := store.Renew(ctx, db, lease.ref(), ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("locker: renew %q: %w", lease.Key, err)
	}
	if !ok {
		return Lease{}, notHeld(ctx, db, lease.Key, lease.Owner, lease.Token)
	}
	renewed := leaseFrom(row, Renewed, sentAt)
	renewed.Mode, renewed.Permits = lease.Mode, lease.Permits
	return renewed, nil
}

// Release frees lease (owner and token must match). With waiters queued on
// the key, the same transaction hands the lease to the head of the queue
// (see Acquire). The row stays, so the next grant on the key still gets a
// larger token. Releasing a lease that is no longer current changes nothing and
// returns a *NotHeldError: the caller lost it earlier, which is worth knowing
// but is not a failure of the release.
func (l *Locker) Release(ctx context.Context, db DBTX, lease Lease) (Lease, error) {
	if err := validLease(lease); err != nil {
		return Lease{}, fmt.Errorf("locker: release: %w", err)
	}
	l.claims.settle(lease.ref())
	row, ok, err := store.Release(ctx, db, store.ReleaseParams{
		LeaseRef: lease.ref(), Log: l.cfg.LogGrants, Actor: l.ownerActor(lease.Owner),
		Lazy: !l.cfg.DurableRelease,
	})
	if err != nil {
		return Lease{}, fmt.Errorf("locker: release %q: %w", lease.Key, err)
	}
	if !ok {
		return Lease{}, notHeld(ctx, db, lease.Key, lease.Owner, lease.Token)
	}
	released := leaseFrom(row, Released, time.Time{})
	released.Mode, released.Permits = lease.Mode, lease.Permits
	return released, nil
}

// validLease refuses a lease whose key or owner no row can have (e.g. one
// typed on a command line) before any SQL, as TryAcquire does: otherwise a
// NUL byte would come back as a database encoding error.
func validLease(lease Lease) error {
	if err := lockdb.ValidateKey(lease.Key); err != nil {
		return err
	}
	return lockdb.ValidateOwner(lease.Owner)
}

// notHeld builds the error for a statement that matched no row, with the
// key's current row so the message can say what happened.
func notHeld(ctx context.Context, db DBTX, key, owner string, token int64) error {
	e := &NotHeldError{Key: key, Owner: owner, Token: token}
	if cur, found, err := store.Get[lockdb.LockInfo](ctx, db, key); err == nil && found {
		e.Current = &cur
	}
	return e
}
