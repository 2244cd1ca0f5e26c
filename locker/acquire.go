package locker

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// tryOne makes one attempt at g's one exclusive key, in one statement (a
// call of distributed_lock_acquire, docs/protocol.md). A refusal names the
// holder, how many wait, and the lock-delay that keeps the key when there
// is one. A try does not jump the queue: a key that is free or lapsed
// while waiters are queued for it is refused; the head waiter gets it.
func (l *Locker) tryOne(ctx context.Context, db DBTX, want grant) (Lease, error) {
	key := want.keys[0]
	sentAt := l.clock.Now()
	sctx, done := knownOutcome(ctx)
	g, found, err := store.TryGrant(sctx, db, l.grantParams(want, key))
	done()
	if err != nil {
		return Lease{}, fmt.Errorf("locker: acquire %q: %w", key, err)
	}
	if g.Granted() {
		lease := leaseFrom(g.LeaseRow, Outcome(g.Outcome), sentAt)
		if ctx.Err() != nil {
			return Lease{}, l.giveBack(ctx, db, lease)
		}
		return lease, nil
	}
	return Lease{}, heldError(g, found)
}

// grantParams is the grant of key that want asks for.
func (l *Locker) grantParams(want grant, key string) store.GrantParams {
	return store.GrantParams{
		Key: key, Owner: want.owner, TTL: want.ttl, Metadata: l.metadata, Actor: l.ownerActor(want.owner),
		LogGrants: l.cfg.LogGrants, LockDelay: want.lockDelay, Modes: want.modes(),
	}
}

// heldError is the *Error of a refused attempt's row (found: the key
// had a row when the attempt started).
func heldError(g store.Grant, found bool) error {
	if found && (g.Outcome == lockdb.OutcomeQueued || g.Outcome == lockdb.OutcomeDelayed) {
		return refusal(g)
	}
	remaining := g.Remaining
	if !found || g.Outcome != lockdb.OutcomeHeld {
		// Free or expired (or not there yet), but another transaction was
		// changing the row right then: almost always another owner's grant
		// in flight. One attempt does not wait for it, nor spin on it (a
		// retry would find it still in flight and cost a round trip each);
		// the key is busy, with no time left to wait for (Acquire retries
		// after a short pause).
		remaining = 0
	}
	return &Error{Kind: ErrHeld, Key: g.Key, Owner: g.Owner, Token: g.Token, ExpiresAt: g.ExpiresAt, Remaining: remaining,
		QueueLength: g.QueueLength}
}

// refusal is the held *Error of a key refused as free or lapsed: kept for its
// queue, or in its lock-delay.
func refusal(g store.Grant) *Error {
	e := &Error{Kind: ErrHeld, Key: g.Key, Owner: g.Owner, Token: g.Token, ExpiresAt: g.ExpiresAt,
		Queued: g.Outcome == lockdb.OutcomeQueued, QueueLength: g.QueueLength, DelayUntil: g.DelayUntil}
	if g.DelayUntil != nil {
		// The refusal's now is expires_at minus remaining.
		e.DelayLeft = g.DelayUntil.Sub(g.ExpiresAt.Add(-g.Remaining))
	}
	return e
}

// giveBack releases a lease granted after the caller had given up (ctx
// ended while the grant was on its way), so the key is not held until its
// TTL by nobody, and returns ctx's error. A renewal is left alone: the
// caller held that lease before and still does.
func (l *Locker) giveBack(ctx context.Context, db DBTX, lease Lease) error {
	if lease.Outcome != Renewed {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
		defer cancel()
		_, _ = l.Release(rctx, db, lease)
	}
	return fmt.Errorf("locker: acquire %q: %w", lease.Key, ctx.Err())
}
