package locker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockctl/lockctl/store"
)

// Acquire takes key for owner, waiting while another owner holds it, until
// it is granted or ctx ends.
//
// It does not poll: between attempts it sleeps until the holder's lease
// expires (read from the database clock), a release of the key is announced
// (with Config.Notifier), or Config.WaitRecheck passes, whichever is first,
// plus a little jitter so waiters do not all retry at once. While it waits,
// a record in distributed_lock_waiter shows it in the console; it is removed
// when Acquire returns, however it returns.
//
// Run it on a pool or a connection, not inside a transaction: the waiter
// record would be invisible until commit, and a transaction that waits holds
// its snapshot and locks for as long. Inside a transaction, use TryAcquire.
func (l *Locker) Acquire(ctx context.Context, db DBTX, key, owner string) (Lease, error) {
	lease, err := l.TryAcquire(ctx, db, key, owner)
	var held *HeldError
	if !errors.As(err, &held) {
		return lease, err
	}
	started := l.clock.Now()

	var wake <-chan struct{}
	if l.cfg.Notifier != nil {
		ch, unsubscribe := l.cfg.Notifier.subscribe(key)
		defer unsubscribe()
		wake = ch
	}
	seenFor := 3 * l.cfg.WaitRecheck
	// Under knownOutcome: a record added as ctx ends must still be known,
	// or nothing would remove it before its seen_until.
	addCtx, added := knownOutcome(ctx)
	waiterID, err := store.AddWaiter(addCtx, db, key, owner, seenFor)
	added()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if waiterID != 0 {
		defer func() {
			// The caller's ctx may be done; the record must go regardless.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = store.RemoveWaiter(rctx, db, waiterID)
		}()
	}
	if err != nil {
		return Lease{}, fmt.Errorf("locker: acquire %q: register waiter: %w", key, err)
	}

	lastRefresh := l.clock.Now()
	for {
		// Registered and subscribed: a release from here on wakes us, so one
		// more attempt closes the gap since the first.
		lease, err = l.tryAcquire(ctx, db, key, owner, fmt.Appendf(nil, `{"waited_ms": %d}`, l.since(started).Milliseconds()))
		if !errors.As(err, &held) {
			return lease, err
		}
		if l.since(lastRefresh) >= l.cfg.WaitRecheck/2 {
			if err := store.RefreshWaiter(ctx, db, waiterID, key, seenFor); err != nil && ctx.Err() == nil {
				return Lease{}, fmt.Errorf("locker: acquire %q: refresh waiter: %w", key, err)
			}
			lastRefresh = l.clock.Now()
		}
		if err := l.sleepUntilWake(ctx, wake, l.waitFor(held.Remaining)); err != nil {
			return Lease{}, fmt.Errorf("locker: acquire %q: gave up waiting for %q after %s: %w",
				key, held.Owner, l.since(started).Round(time.Millisecond), err)
		}
	}
}

// waitFor is the sleep before the next attempt: until the holder's expiry
// plus jitter (up to 5% of it, at most 50ms), at most WaitRecheck.
func (l *Locker) waitFor(remaining time.Duration) time.Duration {
	jitterCap := min(remaining/20, 50*time.Millisecond)
	d := remaining + time.Millisecond
	if remaining <= 0 {
		// The row was being changed (a try does not wait for row locks):
		// the change is usually a statement away from committing.
		d = 10 * time.Millisecond
	}
	if jitterCap > 0 {
		d += rand.N(jitterCap)
	}
	return min(d, l.cfg.WaitRecheck)
}

// sleepUntilWake returns nil after d or on a wake-up (after a few ms of
// jitter, so waiters woken together do not retry in lockstep), or ctx's error.
func (l *Locker) sleepUntilWake(ctx context.Context, wake <-chan struct{}, d time.Duration) error {
	timer, stop := l.clock.Timer(d)
	defer stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer:
		return nil
	case <-wake:
		jitter, stopJitter := l.clock.Timer(rand.N(5 * time.Millisecond))
		defer stopJitter()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-jitter:
			return nil
		}
	}
}
