package locker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// MaxPermits is the most permits a semaphore key may have.
const MaxPermits = 1000

// ErrInvalidPermits: a semaphore asked for fewer than 1 or more than
// MaxPermits permits.
var ErrInvalidPermits = errors.New("invalid permits")

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
		return Lease{}, fmt.Errorf("locker: acquire %q: %w: %d, want 1 to %d", key, ErrInvalidPermits, permits, MaxPermits)
	}
	return l.tryAcquireShared(ctx, db, key, owner, permits)
}

// AcquireShared is TryAcquireShared that retries until the lease is granted
// or ctx ends (then a *GaveUpError). It polls, pausing 10 ms after its
// first refusal and twice as long after each next one, up to
// Config.WaitRecheck and never past the end of the lease that refused it;
// it is not queued in the key's FIFO (a queued Acquire is served first).
func (l *Locker) AcquireShared(ctx context.Context, db DBTX, key, owner string) (Lease, error) {
	return l.acquirePolling(ctx, key, func() (Lease, error) { return l.TryAcquireShared(ctx, db, key, owner) })
}

// AcquirePermit is TryAcquirePermit that retries as AcquireShared does. A
// *ConflictError ends it at once.
func (l *Locker) AcquirePermit(ctx context.Context, db DBTX, key, owner string, permits int) (Lease, error) {
	return l.acquirePolling(ctx, key, func() (Lease, error) { return l.TryAcquirePermit(ctx, db, key, owner, permits) })
}

func (l *Locker) tryAcquireShared(ctx context.Context, db DBTX, key, owner string, permits int) (Lease, error) {
	if err := ValidateKey(key); err != nil {
		return Lease{}, fmt.Errorf("locker: acquire: %w", err)
	}
	if err := ValidateOwner(owner); err != nil {
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

// acquirePolling retries try until it grants, fails otherwise than as held,
// or ctx ends.
func (l *Locker) acquirePolling(ctx context.Context, key string, try func() (Lease, error)) (Lease, error) {
	started := l.clock.Now()
	backoff := 10 * time.Millisecond
	for {
		lease, err := try()
		var held *HeldError
		if !errors.As(err, &held) {
			return lease, err
		}
		pause := backoff
		if held.Remaining > 0 {
			pause = min(pause, held.Remaining)
		}
		backoff = min(2*backoff, l.cfg.WaitRecheck)
		// Jitter, so that pollers refused together do not come back together.
		pause += rand.N(pause/4 + 1)
		timer, stop := l.clock.Timer(pause)
		select {
		case <-ctx.Done():
			stop()
			return Lease{}, &GaveUpError{Key: key, Holder: held.Owner, Waited: l.since(started), Err: ctx.Err(),
				QueueLength: held.QueueLength}
		case <-timer:
		}
	}
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
	return fmt.Sprintf("locker: %q is held %s by %d holder(s); cannot take it %s until they end", e.Key, held, e.Holders, asked)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *ConflictError) Is(target error) bool { return target == ErrHeld }
