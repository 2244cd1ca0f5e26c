package locker

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// waitAll takes every key of g, all or none, waiting while any of them is
// held, until it is granted or ctx ends (docs/queue.md, "Several keys at
// once"). It returns one Lease per key, in key order.
//
// Its first call (distributed_lock_enqueue_all) grants every key if it
// may take them all now, as an attempt would; otherwise it queues the
// caller on every key as one waiter (a record per key, sharing a group),
// in one transaction that locks the keys' rows in sorted order. The set is
// granted only when it can have every key at once: a release of one of its
// keys hands the set every key in that transaction if each of the others
// is free and the set is first in its queue, and otherwise the key stays
// free and promised to the set (an attempt is refused it) until it can.
// Waiters keep arrival order on every key, so two sets never wait for each
// other in a cycle of queue places. Handed keys are claimed together (one
// renewal statement) before it returns.
//
// Nothing is ever held in part: when ctx ends, the database fails or the
// wait is refused as a deadlock, the set's records go and any keys handed
// to it meanwhile are released and passed on (a broken connection leaves
// the records to lapse, 3×WaitRecheck after their last refresh, and a
// handed set unclaimed to lapse at the end of its claim window).
func (l *Locker) waitAll(ctx context.Context, db DBTX, g grant) ([]Lease, error) {
	started := l.clock.Now()
	for again := false; ; again = true {
		leases, done, err := l.acquireAllOrQueue(ctx, db, g, started, again)
		if err != nil {
			return nil, err
		}
		if done {
			return g.stampAll(leases), nil
		}
	}
}

// acquireAllOrQueue enqueues the set once and, if queued, waits for its
// grant. done is false when the caller should enqueue again.
func (l *Locker) acquireAllOrQueue(ctx context.Context, db DBTX, g grant, started time.Time, again bool) ([]Lease, bool, error) {
	keys, owner := g.keys, g.owner
	if err := ctx.Err(); err != nil {
		return nil, true, fmt.Errorf("locker: acquire %s: %w", quoteKeys(keys), err)
	}
	seenFor := 3 * l.cfg.WaitRecheck
	params := store.QueueParams{
		GrantParams: l.grantParams(g, ""), ClaimWindow: l.claimWindow(g.ttl), SeenFor: seenFor,
	}
	if again {
		params.Detail = fmt.Appendf(nil, `{"waited_ms": %d}`, l.since(started).Milliseconds())
	}
	var ws []*waiting
	if n := l.cfg.Notifier; n != nil {
		// Subscribed before the enqueue, on every key: a release of any of
		// them may hand the set its keys, or wake it to check.
		for _, k := range keys {
			w, stop := n.await(k, seenFor)
			defer stop()
			ws = append(ws, w)
		}
		params.WakeChannel = n.channel
	}
	ectx, done := knownOutcome(ctx)
	sentAt := l.clock.Now()
	qs, err := store.EnqueueAll(ectx, db, keys, params)
	done()
	if err != nil {
		return nil, true, fmt.Errorf("locker: acquire %s: %w", quoteKeys(keys), err)
	}
	switch {
	case len(qs) == len(keys) && qs[0].Granted():
		leases := make([]Lease, len(qs))
		for i, q := range qs {
			leases[i] = leaseFrom(q.LeaseRow, Outcome(q.Outcome), sentAt)
		}
		if ctx.Err() != nil {
			return nil, true, l.giveBackAll(ctx, db, leases)
		}
		return leases, true, nil
	case len(qs) > 0 && qs[0].Outcome == lockdb.OutcomeDeadlock:
		return nil, true, deadlockError(keys, owner, qs[0].Cycle)
	case len(qs) != len(keys) || qs[0].Outcome != lockdb.OutcomeQueued:
		// A key's row was being created or changed: try again shortly.
		return nil, false, l.sleepCtx(ctx, 10*time.Millisecond)
	}
	ids := make([]int64, len(qs))
	for i, q := range qs {
		ids[i] = q.WaiterID
		if ws != nil {
			l.cfg.Notifier.queued(ws[i], q.WaiterID)
		}
	}
	return l.waitAllInQueue(ctx, db, owner, keys, ids, qs, ws, seenFor, started)
}

// waitAllInQueue waits as owner's set (records ids, one per key) until it is
// handed every key, then claims them.
func (l *Locker) waitAllInQueue(ctx context.Context, db DBTX, owner string, keys []string, ids []int64,
	qs []store.Queued, ws []*waiting, seenFor time.Duration, started time.Time) (leases []Lease, done bool, err error) {
	settled := false // granted and claimed, or its records already gone
	defer func() {
		if settled {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		did, leaveErr := store.LeaveAll(rctx, db, keys, ids, l.cfg.LogGrants, l.ownerActor(owner))
		if gaveUp, ok := err.(*Error); ok && gaveUp.Kind == ErrHeld {
			gaveUp.left(did, leaveErr)
		} else if leaveErr != nil && err != nil {
			err = fmt.Errorf("%w (leaving the queue failed: %v; its records lapse)", err, leaveErr)
		}
	}()
	kick := make(chan struct{}, 1)
	stopFanIn := fanIn(ws, kick)
	defer stopFanIn()
	longest, holderEnds := setHolder(l, qs)
	checked := false
	for {
		listening := ws != nil && l.cfg.Notifier.Live()
		sleep := l.waitFor(holderEnds.Sub(l.clock.Now()), listening)
		if !checked {
			sleep = min(sleep, deadlockCheck)
		}
		timer, stopTimer := l.clock.Timer(sleep)
		select {
		case <-ctx.Done():
			stopTimer()
			return nil, true, &Error{Kind: ErrHeld, Key: longest.Key, Owner: longest.Owner, Waited: l.since(started), Err: ctx.Err(),
				Position: longest.Position, QueueLength: longest.QueueLength}
		case <-kick:
			stopTimer()
		case <-timer:
		}
		checked = true
		polledAt := l.clock.Now()
		ps, err := store.PollAll(ctx, db, keys, ids, seenFor)
		switch {
		case err != nil && ctx.Err() != nil:
			continue // reported by the select
		case err != nil:
			return nil, true, fmt.Errorf("locker: acquire %s: check the queue: %w", quoteKeys(keys), err)
		case len(ps) != len(keys):
			return nil, true, fmt.Errorf("locker: acquire %s: %d rows for %d keys", quoteKeys(keys), len(ps), len(keys))
		case ps[0].Outcome == lockdb.OutcomeDeadlock:
			settled = true
			return nil, true, deadlockError(keys, owner, ps[0].Cycle)
		case ps[0].Granted():
			handed := make([]Lease, len(ps))
			for i, p := range ps {
				handed[i] = leaseFrom(p.LeaseRow, Outcome(p.Outcome), polledAt)
				handed[i].valid = p.Remaining
			}
			// Claimed together. If that fails, what it did claim is given
			// back with the rest: never a part of the set.
			claimed, err := l.renewAll(ctx, db, handed)
			if err != nil {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeGrace)
				_, _ = l.releaseAll(rctx, db, handed)
				cancel()
				return nil, true, err
			}
			for i := range claimed {
				claimed[i].Outcome = handed[i].Outcome
			}
			settled = true
			if ctx.Err() != nil {
				return nil, true, l.giveBackAll(ctx, db, claimed)
			}
			return claimed, true, nil
		case ps[0].Outcome == lockdb.OutcomeQueued:
			longest, holderEnds = setHolder(l, ps)
		default:
			return nil, true, fmt.Errorf("locker: acquire %s: %w after %s", quoteKeys(keys), ErrQueueLost,
				l.since(started).Round(time.Millisecond))
		}
	}
}

// setHolder is the key a waiting set waits for longest, as its check saw
// it, and when the set checks again (checkAgainAt): it can be granted no
// earlier than that key may be handed on (untilFree).
func setHolder(l *Locker, qs []store.Queued) (store.Queued, time.Time) {
	longest := qs[0]
	for _, q := range qs[1:] {
		if untilFree(q) > untilFree(longest) {
			longest = q
		}
	}
	return longest, l.checkAgainAt(untilFree(longest))
}

// fanIn signals kick whenever any of ws is handed a key, woken or retimed:
// each is a reason for the set to check. Call the function returned to
// stop it.
func fanIn(ws []*waiting, kick chan struct{}) func() {
	stop := make(chan struct{})
	for _, w := range ws {
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-w.wake:
				case <-w.retime:
				case <-w.handoff:
				case <-w.missing:
				}
				signal(kick)
			}
		}()
	}
	return func() { close(stop) }
}
