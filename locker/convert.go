package locker

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Downgrade turns lease, a running exclusive lease, into a shared one with a
// new, larger Token in one transaction (no writer slips in; readers queued at
// the head join it); ErrNotHeld if it is not. Keepalive the new lease.
func (l *Locker) Downgrade(ctx context.Context, db DBTX, lease Lease) (Lease, error) {
	if err := validLease(lease); err != nil {
		return Lease{}, fmt.Errorf("locker: downgrade: %w", err)
	}
	ttl := lease.TTL
	if ttl == 0 {
		ttl = l.cfg.TTL
	}
	l.claims.settle(lease.ref())
	sentAt := l.clock.Now()
	row, ok, err := store.Downgrade(ctx, db, lease.ref(), ttl, l.ownerActor(lease.Owner))
	if err != nil {
		return Lease{}, fmt.Errorf("locker: downgrade %q: %w", lease.Key, err)
	}
	if !ok {
		return Lease{}, notHeld(ctx, db, lease.Key, lease.Owner, lease.Token)
	}
	shared := leaseFrom(row, Acquired, sentAt)
	shared.Mode = ModeShared
	return shared, nil
}

// Upgrade turns lease, a running shared lease or permit, into the exclusive
// lease with a new, larger Token: at once when no other lease runs and nobody
// queues; with wait it queues as Acquire does, keeping lease until the grant
// ends it. Two holders upgrading: the second gets ErrDeadlock; no wait: ErrHeld.
func (l *Locker) Upgrade(ctx context.Context, db DBTX, lease Lease, wait time.Duration) (Lease, error) {
	g, err := l.prepare(Request{Keys: Keys(lease.Key), Owner: lease.Owner, TTL: lease.TTL, Wait: wait})
	if err != nil {
		return Lease{}, fmt.Errorf("locker: upgrade: %w", err)
	}
	g.from = lease.Token
	if wait == 0 {
		sentAt := l.clock.Now()
		q, found, err := l.enqueue(ctx, db, g, l.queueParams(g, 3*l.cfg.WaitRecheck))
		switch {
		case err != nil:
			return Lease{}, err
		case found && q.Granted():
			return leaseFrom(q.LeaseRow, Outcome(q.Outcome), sentAt), nil
		}
		return Lease{}, refusal(q.Grant)
	}
	if wait < WaitForever {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return l.waitOne(ctx, db, g)
}

// enqueue is a waiting acquire's first call: distributed_lock_enqueue, or
// for an upgrade (g.from) distributed_lock_upgrade.
func (l *Locker) enqueue(ctx context.Context, db DBTX, g grant, p store.QueueParams) (store.Queued, bool, error) {
	if g.from == 0 {
		q, found, err := store.Enqueue(ctx, db, p)
		if err != nil {
			err = fmt.Errorf("locker: acquire %q: %w", p.Key, err)
		}
		return q, found, err
	}
	q, err := store.Upgrade(ctx, db, store.UpgradeParams{Queue: p, From: g.from, Wait: g.wait > 0})
	switch {
	case err != nil:
		return q, false, fmt.Errorf("locker: upgrade %q: %w", p.Key, err)
	case q.Outcome == lockdb.OutcomeNotHeld:
		return q, false, notHeld(ctx, db, p.Key, p.Owner, g.from)
	}
	return q, true, nil
}
