package locker

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// MaxPermits is the most permits a semaphore key may have.
const MaxPermits = 1000

// Modes of a key (Lease.Mode, LockInfo.Mode).
const (
	ModeExclusive = lockdb.ModeExclusive // one holder (TryAcquire, Acquire)
	ModeShared    = lockdb.ModeShared    // any number of holders (TryAcquireShared)
	ModeSemaphore = lockdb.ModeSemaphore // at most Permits holders (TryAcquirePermit)
)

// TryAcquireShared makes one attempt to take key shared for owner: any
// number of owners may hold it shared at once, each with a lease of its
// own (its own token and TTL), while nobody holds it exclusively. Renew,
// Keepalive, Release, Fence and the operators' actions take the lease as
// they take an exclusive one. Refused: a *HeldError (an exclusive lease
// runs, or waiters are queued for the key: a writer waiting for the readers
// is not overtaken), or a *ConflictError when the key is a semaphore's.
func (l *Locker) TryAcquireShared(ctx context.Context, db DBTX, key, owner string) (Lease, error) {
	return l.tryAcquireShared(ctx, db, key, owner, 0)
}

// TryAcquirePermit makes one attempt to take one of permits permits of
// key for owner: at most permits owners hold the key at once, each with a
// lease of its own, which returns to the key when it is released or runs
// out. permits lives on the key: asked with other permits while the key
// has holders, the attempt is refused with a *ConflictError; on a free key
// the new permits take effect (an event records the change).
func (l *Locker) TryAcquirePermit(ctx context.Context, db DBTX, key, owner string, permits int) (Lease, error) {
	if permits < 1 || permits > MaxPermits {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w: %d, want 1 to %d", key, errInvalidPermits, permits, MaxPermits)
	}
	return l.tryAcquireShared(ctx, db, key, owner, permits)
}

// AcquireShared takes key shared for owner, waiting in the key's queue
// until it is granted or ctx ends (then a *GaveUpError), as Acquire waits
// for the key itself: one queue in arrival order across modes, so readers
// who come after a queued writer wait for it, and readers queued together
// at the head are handed their leases together. Everything Acquire says of
// the wait (the Notifier, the claim of a handed lease, giving up) holds.
// A *ConflictError (the key is a semaphore's) ends it at once.
func (l *Locker) AcquireShared(ctx context.Context, db DBTX, key, owner string) (Lease, error) {
	if err := lockdb.ValidateKey(key); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire: %w", err)
	}
	if err := lockdb.ValidateOwner(owner); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w", key, err)
	}
	w := wanted{shared: true}
	return w.stamp(l.acquireQueued(ctx, db, key, owner, w))
}

// AcquirePermit takes one of permits permits of key for owner, waiting in
// the key's queue as AcquireShared does: a permit freed (released, or run
// out) is handed to the waiters in turn. A *ConflictError (the key is held
// with other permits, or shared) ends it at once.
func (l *Locker) AcquirePermit(ctx context.Context, db DBTX, key, owner string, permits int) (Lease, error) {
	if permits < 1 || permits > MaxPermits {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w: %d, want 1 to %d", key, errInvalidPermits, permits, MaxPermits)
	}
	if err := lockdb.ValidateKey(key); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire: %w", err)
	}
	if err := lockdb.ValidateOwner(owner); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w", key, err)
	}
	w := wanted{permits: permits}
	return w.stamp(l.acquireQueued(ctx, db, key, owner, w))
}

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

func (l *Locker) tryAcquireShared(ctx context.Context, db DBTX, key, owner string, permits int) (Lease, error) {
	if err := lockdb.ValidateKey(key); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire: %w", err)
	}
	if err := lockdb.ValidateOwner(owner); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w", key, err)
	}
	params := store.GrantParams{Key: key, Owner: owner, TTL: l.cfg.TTL, Metadata: l.metadata,
		Actor: l.ownerActor(owner), LogGrants: l.cfg.LogGrants}
	sentAt := l.clock.Now()
	sctx, done := knownOutcome(ctx)
	g, found, err := store.TryGrantShared(sctx, db, params, permits)
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
		return Lease{}, &ConflictError{Key: key, Mode: g.Mode, Permits: g.Permits, Holders: g.Holders, WantPermits: permits}
	}
	e, ok := heldError(g.Grant, found).(*HeldError)
	if ok {
		e.Mode, e.Permits, e.Holders = g.Mode, g.Permits, g.Holders
		return Lease{}, e
	}
	return Lease{}, heldError(g.Grant, found)
}

// ConflictError refuses a shared or permit grant of a key that its holders
// hold in another mode, or as a semaphore of other permits. It matches
// ErrHeld: the key cannot be had that way now.
type ConflictError struct {
	Key     string
	Mode    string // the key's mode: ModeShared or ModeSemaphore
	Permits int    // the key's permits (semaphores)
	Holders int    // how many leases hold it
	// WantPermits is what the attempt asked for: 0 shared, else permits.
	WantPermits int
}

func (e *ConflictError) Error() string {
	asked := "shared"
	if e.WantPermits > 0 {
		asked = fmt.Sprintf("as a semaphore of %d permits", e.WantPermits)
	}
	held := "shared"
	if e.Mode == ModeSemaphore {
		held = fmt.Sprintf("as a semaphore of %d permits", e.Permits)
	}
	holders := fmt.Sprintf("%d holders; cannot take it %s until they end", e.Holders, asked)
	if e.Holders == 1 {
		holders = fmt.Sprintf("1 holder; cannot take it %s until it ends", asked)
	}
	return fmt.Sprintf("locker: %q is held %s by %s", e.Key, held, holders)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *ConflictError) Is(target error) bool { return target == ErrHeld }
