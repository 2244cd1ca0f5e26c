package locker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// waitOne takes g's one key, waiting in its queue while another owner
// holds it, until it is granted or ctx ends. Waiters are served in arrival
// order, across processes.
//
// Its first call (distributed_lock_enqueue) either grants the key, as an
// attempt would, or queues the caller: one transaction. A release then
// hands the lease to the head of the queue in the release's own
// transaction and announces it to that waiter's process alone, and to the
// process of the waiter now first in line (with Config.Notifier, whose
// channel the waiter's record names; without one, the waiter finds its
// grant when it next checks, every WaitRecheck at most). The announcement
// is only a hint, since any role may NOTIFY: woken by it, the waiter asks
// the database whether its own record was handed the key, and claims the
// lease (renews it to the TTL) in that same call
// (distributed_lock_waiter_claim); a false one costs that call and leaves
// it queued. A handed-off lease first runs for Config.ClaimWindow only; one
// a check finds (not claimed yet) says so in Lease.ExpiresAt, and the
// Locker claims it in the background after half the window if it is still
// held, or at once when db is not a pool. Lease.ValidFor counts from the
// claim once it ran.
//
// While it waits, the caller's record in distributed_lock_waiter is the
// console's queue; a Notifier refreshes the records of all its waiters in
// one statement, and without one each waiter's check refreshes its own.
// The record goes when it returns, however it returns, unless the
// connection broke (then it lapses 3×WaitRecheck after its last refresh); a
// lease handed to it as it gave up is passed on to the next waiter. An owner
// has one place per key: a wait by an owner whose record is still queued
// takes that record over, keeping its place, so waiting again after a
// broken connection loses no turn (and two concurrent waits of one owner on
// one key share one place; see docs/queue.md). When ctx ends first, the
// error says whether a lease may have been handed to it meanwhile.
//
// A shared or permit wait is served from the key's one queue in arrival
// order across modes, so readers who come after a queued writer wait for
// it, and readers queued together at the head are handed their leases
// together; a conflict (the key held in another mode, or as a semaphore
// of other permits) ends it at once.
func (l *Locker) waitOne(ctx context.Context, db DBTX, g grant) (Lease, error) {
	started := l.clock.Now()
	for again := false; ; again = true {
		// again: a first grant of the key by another transaction was in
		// flight, and this call queues anew.
		lease, done, err := l.acquireOrQueue(ctx, db, g, started, again)
		if done || err != nil {
			return g.want.stamp(lease, err)
		}
	}
}

// acquireOrQueue enqueues once and, if queued, waits for the grant. done is
// false when the caller should enqueue again (the key's first grant by
// another was in flight).
func (l *Locker) acquireOrQueue(ctx context.Context, db DBTX, g grant, started time.Time, again bool) (Lease, bool, error) {
	key, owner := g.keys[0], g.owner
	if err := ctx.Err(); err != nil {
		return Lease{}, true, fmt.Errorf("locker: acquire %q: %w", key, err)
	}
	seenFor := 3 * l.cfg.WaitRecheck
	params := l.queueParams(g, seenFor)
	if again {
		// A grant now ends a wait.
		params.Detail = fmt.Appendf(nil, `{"waited_ms": %d}`, l.since(started).Milliseconds())
	}
	var w *waiting
	if n := l.cfg.Notifier; n != nil {
		// Subscribed before the enqueue: a release may hand off to the new
		// waiter before its enqueue's answer arrives.
		var stop func()
		w, stop = n.await(key, seenFor)
		defer stop()
		params.WakeChannel = n.channel
	}
	// Under knownOutcome: once the call has queued the caller, its answer
	// (the waiter id) is what lets the record be taken out again, so a ctx
	// that ends meanwhile gives it outcomeGrace to arrive.
	ectx, done := knownOutcome(ctx)
	sentAt := l.clock.Now()
	q, found, err := l.enqueue(ectx, db, g, params)
	done()
	if err != nil {
		return Lease{}, true, err
	}
	if found && q.Granted() {
		lease := leaseFrom(q.LeaseRow, Outcome(q.Outcome), sentAt)
		if ctx.Err() != nil {
			return Lease{}, true, l.giveBack(ctx, db, lease)
		}
		return lease, true, nil
	}
	if found && q.Outcome == lockdb.OutcomeDeadlock {
		return Lease{}, true, deadlockError([]string{key}, owner, q.Cycle)
	}
	if found && q.Outcome == lockdb.OutcomeConflict {
		// Held as another kind of group: the try says by whom.
		lease, err := l.tryShared(ctx, db, g)
		return lease, true, err
	}
	if !found || q.Outcome != lockdb.OutcomeQueued {
		// The key's first grant by another transaction was in flight.
		return Lease{}, false, l.sleepCtx(ctx, 10*time.Millisecond)
	}
	if w != nil {
		l.cfg.Notifier.queued(w, q.WaiterID)
	}
	return l.waitInQueue(ctx, db, owner, q, w, sentAt, seenFor, started)
}

// queueParams is the entry of g's one key into its queue, its record
// seen for seenFor.
func (l *Locker) queueParams(g grant, seenFor time.Duration) store.QueueParams {
	return store.QueueParams{
		GrantParams: l.grantParams(g, g.keys[0]),
		ClaimWindow: l.claimWindow(g.ttl), SeenFor: seenFor, Shared: g.want.shared, Permits: g.want.permits,
	}
}

// waitInQueue waits as owner's waiter q.WaiterID until the key is handed to
// it.
func (l *Locker) waitInQueue(ctx context.Context, db DBTX, owner string, q store.Queued, w *waiting, sentAt time.Time,
	seenFor time.Duration, started time.Time) (lease Lease, done bool, err error) {
	key, id := q.Key, q.WaiterID
	handed := false
	defer func() {
		if handed {
			return
		}
		// The caller's ctx may be done; the record must go regardless.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		did, leaveErr := store.Leave(rctx, db, key, id, l.cfg.LogGrants, l.ownerActor(owner))
		if err == nil {
			return
		}
		// Whether a grant was made to this caller that it never held.
		if gaveUp, ok := err.(*Error); ok && gaveUp.Kind == ErrHeld {
			gaveUp.left(did, leaveErr)
			return
		}
		switch {
		case leaveErr != nil:
			err = fmt.Errorf("%w (leaving the queue failed: %v; its record keeps its place until it lapses, and Acquire again by the same owner takes it back)", err, leaveErr)
		case did == lockdb.PassedOn:
			err = fmt.Errorf("%w (the lease handed to it meanwhile was released and passed on)", err)
		case did == lockdb.LeftNone:
			err = fmt.Errorf("%w (its record was gone: a lease handed to it may have lapsed unclaimed)", err)
		}
	}()
	holder, holderEnds := q.Owner, l.checkAgainAt(untilFree(q))
	last := q
	// checked: the first check, deadlockCheck after the enqueue, has run.
	checked := false
	for {
		var wake, retime, handoffs, missing <-chan struct{}
		listening := w != nil && l.cfg.Notifier.Live()
		if w != nil {
			wake, retime, handoffs, missing = w.wake, w.retime, w.handoff, w.missing
		}
		sleep := l.waitFor(holderEnds.Sub(l.clock.Now()), listening)
		if !checked {
			sleep = min(sleep, deadlockCheck)
		}
		if w != nil {
			w.sleepUntil.Store(time.Now().Add(sleep).UnixNano())
		}
		timer, stopTimer := l.clock.Timer(sleep)
		select {
		case <-ctx.Done():
			stopTimer()
			return Lease{}, true, &Error{Kind: ErrHeld, Key: key, Owner: holder, Waited: l.since(started), Err: ctx.Err(),
				Position: last.Position, QueueLength: last.QueueLength, DelayUntil: last.DelayUntil}
		case <-handoffs:
			// Said to be handed the key: the database says whether it was,
			// and the claim is made in the same call.
			stopTimer()
			lease, ok, err := l.claimHandOff(ctx, db, key, id)
			if err != nil || ok {
				handed = ok
				return lease, true, err
			}
			continue // not a grant of its own (or ctx ended): it waits on, still queued
		case <-missing:
			// Its record is not live, says the heartbeat: handed the key,
			// claimed here as a NOTIFY's hand-off is, or gone, which the
			// check below finds.
			stopTimer()
			lease, ok, err := l.claimHandOff(ctx, db, key, id)
			if err != nil || ok {
				handed = ok
				return lease, true, err
			}
		case <-retime:
			// Said to be handed to another waiter: wake when that lease's
			// claim window ends, if sooner. A hint only shortens the sleep
			// (what the waiter then learns comes from its check): a false
			// one costs at most that check.
			stopTimer()
			holderEnds = minTime(holderEnds, time.Unix(0, w.expiresAt.Load()))
			continue
		case <-wake:
			stopTimer()
		case <-timer:
		}
		checked = true
		polledAt := l.clock.Now()
		p, err := store.Poll(ctx, db, key, id, seenFor)
		switch {
		case err != nil && ctx.Err() != nil:
			continue // reported by the select
		case err != nil:
			return Lease{}, true, fmt.Errorf("locker: acquire %q: check the queue: %w", key, err)
		case p.Granted():
			lease := leaseFrom(p.LeaseRow, Outcome(p.Outcome), polledAt)
			lease.valid = p.Remaining
			lease, err = l.claim(ctx, db, lease)
			// A claim that failed (its ctx ended mid-call) leaves the
			// lease to the deferred leave, which passes it on, rather
			// than to its claim window.
			handed = err == nil
			return lease, true, err
		case p.Outcome == lockdb.OutcomeQueued:
			holder, holderEnds, last = p.Owner, l.checkAgainAt(untilFree(p)), p
		case p.Outcome == lockdb.OutcomeDeadlock:
			handed = true // its record is gone: nothing to leave
			return Lease{}, true, deadlockError([]string{key}, owner, p.Cycle)
		default:
			// Its record is gone: it lapsed (this process paused longer than
			// the record lives), or the key was handed to it and the claim
			// window ran out before it looked. Either way a grant may have
			// been made that it never held: say so rather than queue again.
			return Lease{}, true, fmt.Errorf("locker: acquire %q: %w after %s", key, ErrQueueLost,
				l.since(started).Round(time.Millisecond))
		}
	}
}

// untilFree is how long from q's answer until the key may be handed on:
// the holder's lease's end or, when nobody holds it but it is in its
// lock-delay, the delay's end (a hand-off waits for it; the waiter's poll
// then hands the key to the queue's head). A released lease has none left.
func untilFree(q store.Queued) time.Duration {
	if q.DelayUntil != nil {
		return q.DelayUntil.Sub(q.DBNow)
	}
	return q.Remaining
}

// checkAgainAt is when a waiter still queued after an answer whose key may
// be handed on in d (untilFree) checks again, unless woken first. With
// d <= 0 the key is free or lapsed and past its lock-delay but was not
// handed to the waiter (every answer hands such a key to its queue's
// head): it waits for the queue ahead of it, or a set for its other keys,
// and a hand-off or release wakes it; it checks every WaitRecheck, for a
// waiter ahead that lapsed, rather than at once and again.
func (l *Locker) checkAgainAt(d time.Duration) time.Time {
	if d <= 0 {
		d = l.cfg.WaitRecheck
	}
	return l.clock.Now().Add(d)
}

// deadlockCheck is how long after it queued a waiting Acquire
// checks its place once, whatever else wakes it: two waits that
// close a cycle at the same moment do not see each other's record as they
// queue, and this check finds the cycle, so a deadlock is reported within
// about twice this of the wait that closed it.
const deadlockCheck = 500 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// waitFor is the sleep before a queued waiter checks on its own: until the
// holder's lease ends, plus jitter (up to 5% of it, at most 50ms) so the
// waiters of a lease that lapsed do not all check at once; at most
// WaitRecheck unless a Notifier is listening for it (which refreshes its
// record and hands it its grant).
func (l *Locker) waitFor(remaining time.Duration, listening bool) time.Duration {
	jitterCap := min(remaining/20, 50*time.Millisecond)
	d := max(remaining, 0) + time.Millisecond
	if jitterCap > 0 {
		d += rand.N(jitterCap)
	} else {
		d += rand.N(5 * time.Millisecond)
	}
	if !listening {
		d = min(d, l.cfg.WaitRecheck)
	}
	return d
}

// sleepCtx sleeps for d on l's clock or until ctx ends.
func (l *Locker) sleepCtx(ctx context.Context, d time.Duration) error {
	timer, stop := l.clock.Timer(d)
	defer stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer:
		return nil
	}
}

// claimHandOff asks the database whether waiter id was handed key and
// claims the lease in the same call. ok is false when nothing was handed
// to it, or when ctx ended (the wait's select reports that).
func (l *Locker) claimHandOff(ctx context.Context, db DBTX, key string, id int64) (lease Lease, ok bool, err error) {
	claimedAt := l.clock.Now()
	row, kind, ok, err := store.Claim(ctx, db, key, id)
	switch {
	case err != nil && ctx.Err() != nil:
		return Lease{}, false, nil
	case err != nil:
		return Lease{}, false, fmt.Errorf("locker: acquire %q: claim the hand-off: %w", key, err)
	case !ok:
		return Lease{}, false, nil
	}
	return leaseFrom(row, Outcome(kind), claimedAt), true, nil
}
