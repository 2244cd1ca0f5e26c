package locker

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// MaxKeys is the most keys one TryAcquireAll or AcquireAll takes: a set is
// one statement that locks a row per key, and the database refuses larger
// sets too.
const MaxKeys = 128

// validKeys checks a key set before any SQL: 1 to MaxKeys valid keys, none
// named twice. It returns the keys sorted, the order the set is locked in.
func validKeys(keys []string) ([]string, error) {
	if len(keys) == 0 || len(keys) > MaxKeys {
		return nil, fmt.Errorf("%w: %d keys (must be 1 to %d)", errInvalidKeys, len(keys), MaxKeys)
	}
	for _, k := range keys {
		if err := lockdb.ValidateKey(k); err != nil {
			return nil, err
		}
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return nil, fmt.Errorf("%w: %q is named twice", errInvalidKeys, sorted[i])
		}
	}
	return sorted, nil
}

// TryAcquireAll makes one attempt to take every key of keys for owner, all
// or none, in one statement (distributed_lock_acquire_all): each key as
// TryAcquire would take it, in one transaction, the keys locked in sorted
// order (so two callers taking overlapping sets in any order never wait for
// each other). It returns one Lease per key, in the order of keys, or the
// refusal of the first key (in sorted order) that could not be taken, a
// *HeldError as TryAcquire's, and then nothing is held: no key granted,
// renewed or created. Like TryAcquire it never waits and does not jump a
// queue. Keys must be 1 to MaxKeys distinct keys (errInvalidKeys).
func (l *Locker) TryAcquireAll(ctx context.Context, db DBTX, keys []string, owner string) ([]Lease, error) {
	sorted, err := validKeys(keys)
	if err != nil {
		return nil, fmt.Errorf("locker: acquire: %w", err)
	}
	if err := lockdb.ValidateOwner(owner); err != nil {
		return nil, fmt.Errorf("locker: acquire %s: %w", quoteKeys(keys), err)
	}
	params := store.GrantParams{
		Owner: owner, TTL: l.cfg.TTL, Metadata: l.metadata, Actor: l.ownerActor(owner), LogGrants: l.cfg.LogGrants,
		LockDelay: l.cfg.LockDelay,
	}
	sentAt := l.clock.Now()
	sctx, done := knownOutcome(ctx)
	grants, err := store.TryGrantAll(sctx, db, sorted, params)
	done()
	if err != nil {
		return nil, fmt.Errorf("locker: acquire %s: %w", quoteKeys(keys), err)
	}
	if len(grants) == len(sorted) && grants[0].Granted() {
		leases := make([]Lease, len(grants))
		for i, g := range grants {
			leases[i] = leaseFrom(g.LeaseRow, Outcome(g.Outcome), sentAt)
		}
		if ctx.Err() != nil {
			return nil, l.giveBackAll(ctx, db, leases)
		}
		return inKeyOrder(keys, leases), nil
	}
	if len(grants) != 1 {
		return nil, fmt.Errorf("locker: acquire %s: %d rows for %d keys", quoteKeys(keys), len(grants), len(keys))
	}
	return nil, heldError(grants[0], grants[0].Outcome != lockdb.OutcomeBusy)
}

// inKeyOrder returns leases (one per key, any order) in the order of keys.
func inKeyOrder(keys []string, leases []Lease) []Lease {
	out := make([]Lease, 0, len(keys))
	for _, k := range keys {
		for _, lease := range leases {
			if lease.Key == k {
				out = append(out, lease)
				break
			}
		}
	}
	return out
}

// giveBackAll releases leases granted after the caller had given up, as
// giveBack does for one, and returns ctx's error.
func (l *Locker) giveBackAll(ctx context.Context, db DBTX, leases []Lease) error {
	var fresh []Lease
	for _, lease := range leases {
		if lease.Outcome != Renewed {
			fresh = append(fresh, lease)
		}
	}
	if len(fresh) > 0 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
		defer cancel()
		_ = l.ReleaseAll(rctx, db, fresh)
	}
	return fmt.Errorf("locker: acquire %s: %w", quoteKeys(leaseKeys(leases)), ctx.Err())
}

func leaseKeys(leases []Lease) []string {
	keys := make([]string, len(leases))
	for i, lease := range leases {
		keys[i] = lease.Key
	}
	return keys
}

// validLeases checks a set of leases of one owner, as validLease does one.
func validLeases(leases []Lease) error {
	if _, err := validKeys(leaseKeys(leases)); err != nil {
		return err
	}
	for _, lease := range leases {
		if err := validLease(lease); err != nil {
			return err
		}
		if lease.Owner != leases[0].Owner {
			return fmt.Errorf("%w: leases of %q and %q: a set has one owner", errInvalidKeys, leases[0].Owner, lease.Owner)
		}
	}
	return nil
}

// ReleaseAll frees leases (one owner, each key once), in one statement
// (distributed_lock_release_all): each as Release frees it, handing each
// key to its waiters. Every lease still current is released even when
// some are not; the error is then a *NotHeldError for the first of those
// (in sorted key order).
func (l *Locker) ReleaseAll(ctx context.Context, db DBTX, leases []Lease) error {
	if err := validLeases(leases); err != nil {
		return fmt.Errorf("locker: release: %w", err)
	}
	refs := make([]store.LeaseRef, len(leases))
	for i, lease := range leases {
		l.claims.settle(lease.ref())
		refs[i] = lease.ref()
	}
	keys := quoteKeys(leaseKeys(leases))
	notHeld, err := store.ReleaseAll(ctx, db, refs, l.cfg.LogGrants, l.ownerActor(leases[0].Owner), !l.cfg.DurableRelease)
	if err != nil {
		return fmt.Errorf("locker: release %s: %w", keys, err)
	}
	return l.notHeldOf(ctx, db, leases, notHeld)
}

// renewAll renews leases (one owner) in one statement, as Renew renews
// one; a lease no longer current is reported as Renew reports it, the
// others renewed all the same.
func (l *Locker) renewAll(ctx context.Context, db DBTX, leases []Lease) ([]Lease, error) {
	ttl := leases[0].TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	refs := make([]store.LeaseRef, len(leases))
	for i, lease := range leases {
		l.claims.settle(lease.ref())
		refs[i] = lease.ref()
	}
	sentAt := l.clock.Now()
	rows, lost, err := store.RenewAll(ctx, db, refs, ttl)
	if err != nil {
		return nil, fmt.Errorf("locker: renew %s: %w", quoteKeys(leaseKeys(leases)), err)
	}
	if err := l.notHeldOf(ctx, db, leases, lost); err != nil {
		return nil, err
	}
	renewed := make([]Lease, len(rows))
	for i, row := range rows {
		renewed[i] = leaseFrom(row, Renewed, sentAt)
	}
	return inKeyOrder(leaseKeys(leases), renewed), nil
}

// notHeldOf is the *NotHeldError of the first key in lost, nil when it is
// empty.
func (l *Locker) notHeldOf(ctx context.Context, db DBTX, leases []Lease, lost []string) error {
	if len(lost) == 0 {
		return nil
	}
	for _, lease := range leases {
		if lease.Key == lost[0] {
			err := notHeld(ctx, db, lease.Key, lease.Owner, lease.Token)
			if len(lost) > 1 {
				return fmt.Errorf("%w (and %d more: %s)", err, len(lost)-1, quoteKeys(lost[1:]))
			}
			return err
		}
	}
	return fmt.Errorf("locker: %q: %w", lost[0], ErrNotHeld)
}

// deadlockError is the *DeadlockError of a refusal's cycle.
func deadlockError(keys []string, owner string, cycle []store.CycleStep) *DeadlockError {
	e := &DeadlockError{Keys: keys, Owner: owner}
	for _, s := range cycle {
		e.Cycle = append(e.Cycle, DeadlockStep{Owner: s.Owner, Key: s.Key})
	}
	return e
}
