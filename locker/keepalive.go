package locker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockctl/lockctl/store"
)

// Keepalive renews leases in the background and ends Context the moment
// one can no longer be trusted.
type Keepalive struct {
	clock  clock // stamps Error.At
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu     sync.Mutex
	leases []Lease // one, or a set's

	session *Session // kept by this session's heartbeat (Session.Keepalive); nil: renewed on its own

	revoked    chan Lease // Revoked: buffered, sent once
	revokeTold bool       // a revoke was sent on revoked
}

// errStopped is the cause after Stop.
var errStopped = errors.New("locker: keepalive stopped")

// Keepalive renews leases (one, or several of one owner in one statement)
// on db every Config.RenewEvery. Its Context, derived from ctx, ends with
// an *Error matching ErrLeaseLost as soon as any of them is lost: a renewal
// finds it no longer current, or none succeeded within its trust window
// (the send time of the last statement that proved it, plus TTL, minus
// Config.SafetyMargin: a lease that cannot be proven is treated as lost).
// A lease nothing has proven yet (one named by key, owner and token) is
// renewed before Keepalive returns; one already past its trust window is
// never trusted. Work under Context; call Stop, then Release the Leases.
func (l *Locker) Keepalive(ctx context.Context, db DBTX, leases ...Lease) *Keepalive {
	return l.startKeepalive(ctx, db, slices.Clone(leases))
}

// startKeepalive renews set in the background. A set that is invalid, or
// already past its trust window, ends the Keepalive before it returns: its
// holder must not begin work under a Context that was never trustworthy,
// and a goroutine's first look may come late on a busy machine.
func (l *Locker) startKeepalive(ctx context.Context, db DBTX, set []Lease) *Keepalive {
	k := l.newKeepalive(ctx, set)
	if err := validLeases(set); err != nil {
		k.lose(&Error{Kind: ErrLeaseLost, Key: quoteKeys(leaseKeys(set)), Reason: err.Error(), Err: err})
		close(k.done)
		return k
	}
	if unproven(set) {
		proven, err := l.prove(k.ctx, db, set)
		if err != nil {
			k.lose(&Error{Kind: ErrLeaseLost, Key: earliest(set).Key, Err: err,
				Reason: fmt.Sprintf("%s could not be proven: nothing vouched for it before its first renewal, which failed: %v",
					quoteKeys(leaseKeys(set)), err)})
			close(k.done)
			return k
		}
		set = proven
		k.leases = proven
		k.noteRevoke(set)
	}
	w := l.trustOf(earliest(set))
	if !l.clock.Now().Before(w.until) {
		k.lose(&Error{Kind: ErrLeaseLost, Key: earliest(set).Key,
			Reason: fmt.Sprintf("%q could not be renewed before its expiry: its trust window had already passed", earliest(set).Key)})
		close(k.done)
		return k
	}
	go k.run(l, db, w)
	return k
}

func (l *Locker) newKeepalive(ctx context.Context, set []Lease) *Keepalive {
	kctx, cancel := context.WithCancelCause(ctx)
	return &Keepalive{clock: l.clock, ctx: kctx, cancel: cancel, done: make(chan struct{}), leases: set,
		revoked: make(chan Lease, 1)}
}

// lose ends k's Context with lost, stamped with the moment k stopped
// trusting its leases.
func (k *Keepalive) lose(lost *Error) {
	lost.At = k.clock.Now()
	k.cancel(lost)
}

// trust is when a lease's renewal is due and when it stops being trusted,
// and the renew interval of its TTL.
type trust struct {
	next, until time.Time
	every       time.Duration
}

// trustOf is lease's trust window as of its grant or last renewal.
func (l *Locker) trustOf(lease Lease) trust {
	ttl := lease.TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	every, margin := l.renewEvery(ttl), l.safetyMargin(ttl)
	// Renewals are timed from when the lease was granted or last renewed,
	// not from now: a Keepalive started some time after the grant (a slow
	// first connection, say) must still renew before its trust window ends,
	// rather than wake at the window's end and give up without trying.
	w := trust{next: lease.sentAt.Add(every), until: lease.sentAt.Add(ttl - margin), every: every}
	if left := lease.revokeLeft; left > 0 {
		// A revoke's deadline: trusted no longer, and renewed as usual
		// (the holder may still release before it).
		w.until = minTime(w.until, lease.sentAt.Add(left-min(margin, left/2)))
	}
	if lease.valid > 0 {
		// Handed off from a queue and not yet claimed: only the claim
		// window is certain, so renew (claim) at once, and trust it, as any
		// lease, a safety margin short of its end (at most half of it).
		w.next, w.until = l.clock.Now(), lease.sentAt.Add(lease.valid-min(margin, lease.valid/2))
	}
	return w
}

// unproven reports whether a lease of set was not returned by a statement
// of this package (it was named by key, owner and token): nothing says
// when it was granted, or whether it still runs.
func unproven(set []Lease) bool {
	for _, lease := range set {
		if lease.sentAt.IsZero() {
			return true
		}
	}
	return false
}

// prove renews set once, for a Keepalive that must not vouch for leases
// nothing has proven: within the trust window a renewal sent now would
// open, since a reply later than that proves nothing.
func (l *Locker) prove(ctx context.Context, db DBTX, set []Lease) ([]Lease, error) {
	ttl := set[0].TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	rctx, cancel := context.WithTimeout(ctx, ttl-l.safetyMargin(ttl))
	defer cancel()
	return l.renewSet(rctx, db, set)
}

// Context ends if a lease is lost (context.Cause: why), at Stop, or with ctx.
func (k *Keepalive) Context() context.Context { return k.ctx }

// Leases are the leases as last renewed, in the order given.
func (k *Keepalive) Leases() []Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.leases)
}

// Revoked receives, once, the first renewal of a revoked lease.
func (k *Keepalive) Revoked() <-chan Lease { return k.revoked }

// revokeBound marks k's leases an operator revoked, as a session's
// heartbeat read them, and tells Revoked.
func (k *Keepalive) revokeBound(revokes map[store.BoundRef]*store.Revoke) {
	if len(revokes) == 0 {
		return
	}
	k.mu.Lock()
	for i, lease := range k.leases {
		k.leases[i] = lease.withRevoke(revokes[store.BoundRef{Key: lease.Key, Token: lease.Token}])
	}
	set := slices.Clone(k.leases)
	k.mu.Unlock()
	k.noteRevoke(set)
}

// noteRevoke tells Revoked of the first lease of set an operator revoked.
func (k *Keepalive) noteRevoke(set []Lease) {
	if k.revokeTold {
		return
	}
	for _, lease := range set {
		if lease.RevokedByRole != "" {
			k.revokeTold = true
			k.revoked <- lease
			return
		}
	}
}

// Stop stops renewing (it does not release) and ends Context; a session
// unbinds the leases at its next heartbeat.
func (k *Keepalive) Stop() {
	k.cancel(errStopped)
	<-k.done
	if k.session != nil {
		k.session.unbind(k)
	}
}

// setLeases gives k's leases the expiry of the session that keeps them, as
// of a heartbeat (or binding) sent at sentAt.
func (k *Keepalive) setLeases(row store.SessionRow, sentAt time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range k.leases {
		lease := &k.leases[i]
		lease.ExpiresAt, lease.TTL, lease.sentAt, lease.valid, lease.claim = row.ExpiresAt, row.TTL, sentAt, 0, nil
	}
}

func (k *Keepalive) run(l *Locker, db DBTX, w trust) {
	defer close(k.done)
	set := k.Leases()
	lease := earliest(set)
	trustUntil, next := w.until, w.next
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
			k.lose(&Error{Kind: ErrLeaseLost, Key: lease.Key, Err: lastErr,
				Reason: fmt.Sprintf("%q could not be renewed before its expiry: %s", lease.Key, why)})
			return
		}
		// The window as a timeout, not a deadline: it is measured on the
		// Locker's clock, which a context's deadline is not. A renewal
		// still out when the window ends ends the lease then, not when the
		// call comes back: aborting a statement takes a round trip, longer
		// on a busy server, and the lease may expire meanwhile.
		rctx, cancel := context.WithTimeout(k.ctx, trustUntil.Sub(now))
		key := lease.Key
		stopLosing := context.AfterFunc(rctx, func() {
			if errors.Is(rctx.Err(), context.DeadlineExceeded) {
				k.lose(&Error{Kind: ErrLeaseLost, Key: key, Err: rctx.Err(),
					Reason: fmt.Sprintf("%q could not be renewed before its expiry: the renewal was still out when its trust window ended", key)})
			}
		})
		renewedSet, err := l.renewSet(rctx, db, set)
		stopped := stopLosing()
		cancel()
		if !stopped {
			return // lost (or stopped) while the renewal was out
		}
		switch {
		case err == nil:
			set = renewedSet
			renewed := earliest(set)
			lease = renewed
			k.mu.Lock()
			k.leases = set
			k.mu.Unlock()
			k.noteRevoke(set)
			w = l.trustOf(renewed)
			trustUntil, next = w.until, w.next
			lastErr = nil
		case errors.Is(err, ErrNotHeld):
			lost := lease.Key
			if nh := (*Error)(nil); errors.As(err, &nh) {
				lost = nh.Key // of a set: the one lost
			}
			k.lose(&Error{Kind: ErrLeaseLost, Key: lost, Reason: err.Error(), Err: err})
			return
		default:
			// Unknown state: retry soon, but never trust past trustUntil.
			lastErr = err
			next = l.clock.Now().Add(min(w.every/4, time.Second))
		}
	}
}

// renewSet renews one lease (Renew) or a set (one statement).
func (l *Locker) renewSet(ctx context.Context, db DBTX, set []Lease) ([]Lease, error) {
	if len(set) == 1 {
		renewed, err := l.renew(ctx, db, set[0])
		return []Lease{renewed}, err
	}
	return l.renewAll(ctx, db, set)
}

// earliest is the lease of set trusted the shortest: the set is kept only
// while every lease is.
func earliest(set []Lease) Lease {
	first := set[0]
	for _, lease := range set[1:] {
		if lease.sentAt.Add(lease.length()).Before(first.sentAt.Add(first.length())) {
			first = lease
		}
	}
	return first
}
