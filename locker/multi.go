package locker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// tryAll makes one attempt to take every key of g, all or none, in one
// statement (distributed_lock_acquire_all): each key as tryOne would take
// it, in one transaction, the keys locked in sorted order (so two callers
// taking overlapping sets in any order never wait for each other). It
// returns one Lease per key, in key order, or the refusal of the first key
// (in sorted order) that could not be taken, and then nothing is held: no
// key granted, renewed or created. Like tryOne it never waits and does not
// jump a queue.
func (l *Locker) tryAll(ctx context.Context, db DBTX, g grant) ([]Lease, error) {
	keys, sorted := g.named, g.keys
	params := l.grantParams(g, "")
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
		leases = g.stampAll(leases)
		if ctx.Err() != nil {
			return nil, l.giveBackAll(ctx, db, leases)
		}
		return leases, nil
	}
	if len(grants) != 1 {
		return nil, fmt.Errorf("locker: acquire %s: %d rows for %d keys", quoteKeys(keys), len(grants), len(keys))
	}
	if grants[0].Outcome == lockdb.OutcomeConflict {
		// A shared or semaphore key of the set, held in another mode.
		return nil, &Error{Kind: ErrHeld, Key: grants[0].Key, Owner: grants[0].Owner, Conflict: true}
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
	l.releaseFresh(ctx, db, leases)
	return fmt.Errorf("locker: acquire %s: %w", quoteKeys(leaseKeys(leases)), ctx.Err())
}

// releaseFresh releases the leases the call granted, past the end of ctx;
// a renewal is left alone (the caller held that lease before and still
// does).
func (l *Locker) releaseFresh(ctx context.Context, db DBTX, leases []Lease) {
	var fresh []Lease
	for _, lease := range leases {
		if lease.Outcome != Renewed {
			fresh = append(fresh, lease)
		}
	}
	if len(fresh) > 0 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
		defer cancel()
		_, _ = l.Release(rctx, db, fresh...)
	}
}

func leaseKeys(leases []Lease) []string {
	keys := make([]string, len(leases))
	for i, lease := range leases {
		keys[i] = lease.Key
	}
	return keys
}

// validLeases checks a set of leases of one owner, as validLease does one:
// 1 to MaxKeys of them, each key once.
func validLeases(leases []Lease) error {
	if len(leases) == 0 || len(leases) > MaxKeys {
		return fmt.Errorf("%w: %d leases (must be 1 to %d)", errInvalidKeys, len(leases), MaxKeys)
	}
	keys := leaseKeys(leases)
	slices.Sort(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			return fmt.Errorf("%w: %q is named twice", errInvalidKeys, keys[i])
		}
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

// releaseAll frees leases (one owner, each key once), in one statement
// (distributed_lock_release_all): each as Release frees one. Every lease
// still current is released even when some are not; the error then names
// the first of those (in sorted key order).
func (l *Locker) releaseAll(ctx context.Context, db DBTX, leases []Lease) ([]Lease, error) {
	refs := l.settle(leases)
	rows, notHeld, err := store.ReleaseAll(ctx, db, refs, l.cfg.LogGrants, l.ownerActor(leases[0].Owner), !l.cfg.DurableRelease)
	if err != nil {
		return nil, fmt.Errorf("locker: release %s: %w", quoteKeys(leaseKeys(leases)), err)
	}
	return inKeyOrder(leaseKeys(leases), leasesFrom(rows, Released, time.Time{})), l.notHeldOf(ctx, db, leases, notHeld)
}

// renewAll renews leases (one owner) in one statement, by the first's TTL,
// as Renew renews one; a lease no longer current is reported as Renew
// reports it, the others renewed all the same.
func (l *Locker) renewAll(ctx context.Context, db DBTX, leases []Lease) ([]Lease, error) {
	ttl := leases[0].TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	refs := l.settle(leases)
	sentAt := l.clock.Now()
	rows, lost, err := store.RenewAll(ctx, db, refs, ttl)
	if err != nil {
		return nil, fmt.Errorf("locker: renew %s: %w", quoteKeys(leaseKeys(leases)), err)
	}
	if err := l.notHeldOf(ctx, db, leases, lost); err != nil {
		return nil, err
	}
	return inKeyOrder(leaseKeys(leases), leasesFrom(rows, Renewed, sentAt)), nil
}

// settle names leases for a statement that renews or releases them, which
// settles their background claims (claim.go).
func (l *Locker) settle(leases []Lease) []store.LeaseRef {
	refs := make([]store.LeaseRef, len(leases))
	for i, lease := range leases {
		l.claims.settle(lease.ref())
		refs[i] = lease.ref()
	}
	return refs
}

// leasesFrom is leaseFrom of each of rows.
func leasesFrom(rows []store.LeaseRow, outcome Outcome, sentAt time.Time) []Lease {
	leases := make([]Lease, len(rows))
	for i, row := range rows {
		leases[i] = leaseFrom(row, outcome, sentAt)
	}
	return leases
}

// notHeldOf is the *Error of the first key in lost, nil when it is
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

// deadlockError is the *Error of a refusal's cycle.
func deadlockError(keys []string, owner string, cycle []store.CycleStep) *Error {
	e := &Error{Kind: ErrDeadlock, Keys: keys, Owner: owner}
	for _, s := range cycle {
		e.Cycle = append(e.Cycle, DeadlockStep{Owner: s.Owner, Key: s.Key})
	}
	return e
}
