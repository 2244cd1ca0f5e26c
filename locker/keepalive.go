package locker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Keepalive renews a lease in the background and tells its holder, by
// cancelling Context, the moment the lease can no longer be trusted.
type Keepalive struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu    sync.Mutex
	lease Lease
}

// errStopped is the cause after Stop.
var errStopped = errors.New("locker: keepalive stopped")

// Keepalive starts renewing lease on db every Config.RenewEvery (default a
// third of the lease's TTL). Its Context, derived from ctx, is cancelled with
// a *LeaseLostError (matching ErrLeaseLost) when
//
//   - a renewal reports the lease is no longer current (stolen, force-expired,
//     released), or
//   - renewals keep failing (database unreachable, say) until the trust
//     window — the send time of the last successful grant or renewal, plus
//     TTL, minus Config.SafetyMargin — has passed: a lease that cannot be
//     proven is treated as lost, because another owner may take it as soon
//     as it expires.
//
// Do the guarded work under Context; call Stop when done, then Release.
func (l *Locker) Keepalive(ctx context.Context, db DBTX, lease Lease) *Keepalive {
	kctx, cancel := context.WithCancelCause(ctx)
	k := &Keepalive{ctx: kctx, cancel: cancel, done: make(chan struct{}), lease: lease}
	go k.run(l, db)
	return k
}

// Context ends when the lease is lost, Stop is called, or the parent ends.
func (k *Keepalive) Context() context.Context { return k.ctx }

// Lease is the lease as last renewed.
func (k *Keepalive) Lease() Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease
}

// Err is nil while the lease is kept, and why it is no longer kept after.
func (k *Keepalive) Err() error {
	if k.ctx.Err() == nil {
		return nil
	}
	return context.Cause(k.ctx)
}

// Stop stops renewing (it does not release) and waits for the renewer to
// exit. Context is cancelled.
func (k *Keepalive) Stop() {
	k.cancel(errStopped)
	<-k.done
}

func (k *Keepalive) run(l *Locker, db DBTX) {
	defer close(k.done)
	lease := k.Lease()
	ttl := lease.TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	every, margin := l.renewEvery(ttl), l.safetyMargin(ttl)
	trustUntil := lease.sentAt.Add(ttl - margin)
	// Renewals are timed from when the lease was granted or last renewed,
	// not from now: a Keepalive started some time after the grant (a slow
	// first connection, say) must still renew before its trust window ends,
	// rather than wake at the window's end and give up without trying.
	next := lease.sentAt.Add(every)
	if lease.valid > 0 {
		// Handed off from a queue and not yet claimed: only the claim
		// window is certain, so renew (claim) at once, and trust it, as any
		// lease, a safety margin short of its end (at most half of it).
		trustUntil = lease.sentAt.Add(lease.valid - min(margin, lease.valid/2))
		next = l.clock.Now()
	}
	if lease.sentAt.IsZero() {
		// A lease named by LeaseOf: nothing says when it was granted, so
		// renew at once to learn.
		now := l.clock.Now()
		trustUntil = now.Add(ttl - margin)
		next = now
	}
	var lastErr error
	for {
		now := l.clock.Now()
		timer, stop := l.clock.Timer(min(next.Sub(now), trustUntil.Sub(now)))
		select {
		case <-k.ctx.Done():
			stop()
			return
		case <-timer:
		}
		now = l.clock.Now()
		if !now.Before(trustUntil) {
			why := "its trust window had already passed"
			if lastErr != nil {
				why = lastErr.Error()
			}
			k.cancel(&LeaseLostError{Key: lease.Key, Err: lastErr,
				Reason: fmt.Sprintf("%q could not be renewed before its expiry: %s", lease.Key, why)})
			return
		}
		// The window as a timeout, not a deadline: it is measured on the
		// Locker's clock, which a context's deadline is not.
		rctx, cancel := context.WithTimeout(k.ctx, trustUntil.Sub(now))
		renewed, err := l.Renew(rctx, db, lease)
		cancel()
		switch {
		case err == nil:
			lease = renewed
			k.mu.Lock()
			k.lease = renewed
			k.mu.Unlock()
			trustUntil = renewed.sentAt.Add(renewed.TTL - margin)
			next = renewed.sentAt.Add(every)
			lastErr = nil
		case errors.Is(err, ErrNotHeld):
			k.cancel(&LeaseLostError{Key: lease.Key, Reason: err.Error(), Err: err})
			return
		default:
			// Unknown state: retry soon, but never trust past trustUntil.
			lastErr = err
			next = l.clock.Now().Add(min(every/4, time.Second))
		}
	}
}
