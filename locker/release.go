package locker

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Renew extends leases (of one owner: one statement) by their TTL (the
// first's; Config.TTL when zero) from the database's now, while each is the
// current grant (owner and token match); otherwise ErrNotHeld, the others
// renewed all the same.
func (l *Locker) Renew(ctx context.Context, db DBTX, leases ...Lease) ([]Lease, error) {
	if err := validLeases(leases); err != nil {
		return nil, fmt.Errorf("locker: renew: %w", err)
	}
	if len(leases) > 1 {
		return l.renewAll(ctx, db, leases)
	}
	renewed, err := l.renew(ctx, db, leases[0])
	if err != nil {
		return nil, err
	}
	return []Lease{renewed}, nil
}

// renew renews one lease.
func (l *Locker) renew(ctx context.Context, db DBTX, lease Lease) (Lease, error) {
	ttl := lease.TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	if err := validTTL(ttl); err != nil {
		return Lease{}, fmt.Errorf("locker: renew %q: %w", lease.Key, err)
	}
	l.claims.settle(lease.ref()) // this renewal is the claim of a handed-off lease
	sentAt := l.clock.Now()
	row, revoke, ok, err := store.Renew(ctx, db, lease.ref(), ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("locker: renew %q: %w", lease.Key, err)
	}
	if !ok {
		return Lease{}, notHeld(ctx, db, lease.Key, lease.Owner, lease.Token)
	}
	renewed := leaseFrom(row, Renewed, sentAt).withRevoke(revoke)
	renewed.Mode, renewed.Permits = lease.Mode, lease.Permits
	return renewed, nil
}

// Release frees leases (of one owner: one statement; owner and token must
// match), handing each key to its first waiter in the same transaction. A
// lease no longer current changes nothing and fails with ErrNotHeld (the
// others are released all the same).
func (l *Locker) Release(ctx context.Context, db DBTX, leases ...Lease) ([]Lease, error) {
	if err := validLeases(leases); err != nil {
		return nil, fmt.Errorf("locker: release: %w", err)
	}
	if len(leases) > 1 {
		return l.releaseAll(ctx, db, leases)
	}
	lease := leases[0]
	l.claims.settle(lease.ref())
	row, ok, err := store.Release(ctx, db, store.ReleaseParams{
		LeaseRef: lease.ref(), Log: l.cfg.LogGrants, Actor: l.ownerActor(lease.Owner),
		Lazy: !l.cfg.DurableRelease,
	})
	if err != nil {
		return nil, fmt.Errorf("locker: release %q: %w", lease.Key, err)
	}
	if !ok {
		return nil, notHeld(ctx, db, lease.Key, lease.Owner, lease.Token)
	}
	released := leaseFrom(row, Released, time.Time{})
	released.Mode, released.Permits = lease.Mode, lease.Permits
	return []Lease{released}, nil
}

// validLease refuses a lease whose key or owner no row can have (e.g. one
// typed on a command line) before any SQL, as Acquire does: otherwise a
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
	e := &Error{Kind: ErrNotHeld, Key: key, Owner: owner, Token: token}
	if cur, found, err := store.Get[lockdb.LockInfo](ctx, db, key); err == nil && found {
		e.Current = &cur
	}
	return e
}
