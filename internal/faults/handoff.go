package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Faults of the fair queue (locker.Acquire's hand-off).
const (
	// DeadWaiter queues a waiter on a held hot key and lets it die at once:
	// its record stays live for a while, so a release hands it the lease,
	// which nobody claims; the claim window runs out and the next waiter
	// takes the key over (observed as claim_window_ran_out). Every other
	// dead waiter is a set's: it queues on the held key and one more at
	// once (a set's waiting Acquire's first call), and is handed both together or
	// neither.
	DeadWaiter = "dead_waiter"
	// RestartHandOff crashes the server (immediate restart) while a release
	// of a key with live waiters, which would hand the lease off, waits for
	// the key's row.
	RestartHandOff = "restart_mid_handoff"
)

// deadWaiterClient is the history's client number of the dead waiters:
// their grants are unknown (a process that died may have been handed the
// lease), never told.
const deadWaiterClient = -1

// deadWaiter queues a waiter that never checks, claims or leaves, on a
// held hot key: every worker contends for those, so once the lease handed
// to the dead waiter lapses, someone takes it over within the run.
func (in *injector) deadWaiter(ctx context.Context) (bool, error) {
	key := in.heldHotKey()
	if key == "" {
		return false, nil
	}
	in.deadSeq++
	in.deadWaiters++
	owner := fmt.Sprintf("dead-waiter-%d", in.deadSeq)
	params := store.QueueParams{
		GrantParams: store.GrantParams{Key: key, Owner: owner, TTL: in.ttl, Actor: owner, LogGrants: true},
		// Live long enough to reach the head of the queue and be handed the
		// key, which then lapses unclaimed.
		ClaimWindow: in.ttl / 2, SeenFor: 5 * in.ttl,
	}
	// Counted apart from the staged hand-offs' waiters, so that the first
	// dead waiter of a run is always a single key's, whose take-over is
	// the likelier to come within the run.
	if in.deadWaiters%2 == 0 {
		return in.deadSetWaiter(ctx, params)
	}
	op := history.Op{Client: deadWaiterClient, Kind: history.Grant, Key: key, Owner: owner,
		Result: history.Unknown, Err: "the waiter died in the queue", Call: in.rec.Now()}
	q, found, err := store.Enqueue(ctx, in.admin, params)
	op.Return = in.rec.Now()
	in.rec.Add(op)
	if err != nil {
		return false, err
	}
	// Granted at once (the key was released meanwhile): as dead, never
	// released; it expires at its TTL, as a crashed holder's would.
	return found && (q.Outcome == lockdb.OutcomeQueued || q.Granted()), nil
}

// deadSetWaiter queues p's owner, as a set, on p.Key and another key, and
// lets it die: its records stay live, so it is handed both keys together
// once it heads both queues and both are free, and they lapse unclaimed.
func (in *injector) deadSetWaiter(ctx context.Context, p store.QueueParams) (bool, error) {
	all := in.workers[0].keys
	other := all[in.rng.IntN(len(all))]
	for other == p.Key {
		other = all[in.rng.IntN(len(all))]
	}
	keys := []string{p.Key, other}
	call := in.rec.Now()
	qs, err := store.EnqueueAll(ctx, in.admin, keys, p)
	ret := in.rec.Now()
	for _, k := range keys {
		in.rec.Add(history.Op{Client: deadWaiterClient, Kind: history.Grant, Key: k, Owner: p.Owner, Set: p.Owner,
			Result: history.Unknown, Err: "the set's waiter died in the queue", Call: call, Return: ret})
	}
	if err != nil {
		return false, err
	}
	return len(qs) == len(keys) && (qs[0].Outcome == lockdb.OutcomeQueued || qs[0].Granted()), nil
}

// liveQueueSQL finds a key whose release would hand off: one with live
// waiters that some worker holds.
const liveQueueSQL = `
SELECT w.lock_key FROM distributed_lock_waiter w JOIN distributed_lock_state l USING (lock_key)
WHERE w.seen_until > l.db_now AND l.state IN ('held', 'expiring')
LIMIT 1`

// shareRowSQL holds a key's row against its release (and renewals) but not
// against its holder's fenced writes (distributed_lock_fence locks the row
// FOR SHARE too), so the holder gets through its writes to the release.
const shareRowSQL = `SELECT 1 FROM distributed_lock WHERE lock_key = $1 AND slot = 0 FOR SHARE`

// restartMidHandOff holds a queued key's row so that its holder's release
// (and hand-off) waits for it, and crashes the server once it does.
func (in *injector) restartMidHandOff(ctx context.Context) (bool, error) {
	if ok, err := in.restartMidWorkersHandOff(ctx); ok || err != nil {
		return ok, err
	}
	// No queue right now, or its holder did not come to its release in
	// time (hand-offs are quick, and a held row stops renewals too): stage
	// one.
	return in.restartMidOwnHandOff(ctx)
}

// restartMidWorkersHandOff is restartMidHandOff on a queue of the workers'.
func (in *injector) restartMidWorkersHandOff(ctx context.Context) (bool, error) {
	var key string
	if err := in.admin.QueryRow(ctx, liveQueueSQL).Scan(&key); err != nil {
		return false, nil // no queue right now
	}
	wctx, cancel := context.WithTimeout(ctx, in.ttl)
	defer cancel()
	held := make(chan struct{})
	go func() {
		defer close(held)
		_ = in.hold(wctx, in.ttl, shareRowSQL, key)
	}()
	defer func() { cancel(); <-held }()
	return in.crashWhenReleaseWaits(ctx, wctx)
}

// countHandOffs counts, from the event log, the hand-offs to waiters (grants
// whose detail names a waiter_id) and the leases handed to dead waiters that
// lapsed unclaimed and were taken over.
func countHandOffs(ctx context.Context, conn *pgx.Conn, c *counts) error {
	var handOffs, lapsed int
	if err := conn.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE detail ? 'waiter_id'),
       count(*) FILTER (WHERE kind = 'stolen' AND previous_owner LIKE 'dead-waiter-%')
FROM distributed_lock_event WHERE kind IN ('acquired', 'stolen')`).Scan(&handOffs, &lapsed); err != nil {
		return err
	}
	for range handOffs {
		c.Observe("hand_off")
	}
	for range lapsed {
		c.Observe("claim_window_ran_out")
	}
	return nil
}

// handOffClient is the history's client number of the injector's own
// holder, whose grant and release around a crash are unknown.
const handOffClient = -2

// restartMidOwnHandOff stages what restartMidHandOff waits for when the
// workers have no queue: the injector takes a key of its own, queues a
// dead waiter behind itself, holds the key's row and starts the release
// that would hand the key to the waiter, and crashes the server once that
// release waits for the row.
func (in *injector) restartMidOwnHandOff(ctx context.Context) (bool, error) {
	in.deadSeq++
	key := fmt.Sprintf("faults-handoff-%d", in.deadSeq)
	holder := "faults-handoff-holder"
	grantOp := history.Op{Client: handOffClient, Kind: history.Grant, Key: key, Owner: holder,
		Result: history.Unknown, Err: "the injector's own lease, crashed in its release", Call: in.rec.Now()}
	g, found, err := store.TryGrant(ctx, in.admin, store.GrantParams{Key: key, Owner: holder, TTL: 5 * in.ttl,
		Actor: holder, LogGrants: true})
	grantOp.Return = in.rec.Now()
	in.rec.Add(grantOp)
	if err != nil || !found || !g.Granted() {
		return false, err
	}
	waiter := fmt.Sprintf("dead-waiter-%d", in.deadSeq)
	waitOp := history.Op{Client: deadWaiterClient, Kind: history.Grant, Key: key, Owner: waiter,
		Result: history.Unknown, Err: "the waiter died in the queue", Call: in.rec.Now()}
	_, _, err = store.Enqueue(ctx, in.admin, store.QueueParams{
		GrantParams: store.GrantParams{Key: key, Owner: waiter, TTL: in.ttl, Actor: waiter, LogGrants: true},
		ClaimWindow: in.ttl / 2, SeenFor: 5 * in.ttl,
	})
	waitOp.Return = in.rec.Now()
	in.rec.Add(waitOp)
	if err != nil {
		return false, err
	}
	wctx, cancel := context.WithTimeout(ctx, in.ttl)
	defer cancel()
	held, locked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(held)
		_ = in.holdThen(wctx, in.ttl, locked, shareRowSQL, key)
	}()
	released := make(chan struct{})
	releaseOp := history.Op{Client: handOffClient, Kind: history.Release, Key: key, Owner: holder, Token: g.Token,
		Result: history.Unknown, Err: "crashed while waiting for the row", Call: in.rec.Now()}
	go func() {
		defer close(released)
		// Behind the row lock held above, once it is; the crash cuts it off.
		select {
		case <-locked:
		case <-wctx.Done():
			return
		}
		_, _, _ = store.Release(wctx, in.admin, store.ReleaseParams{
			LeaseRef: store.LeaseRef{Key: key, Owner: holder, Token: g.Token}, Log: true, Actor: holder})
	}()
	defer func() {
		cancel()
		<-held
		<-released
		releaseOp.Return = in.rec.Now()
		in.rec.Add(releaseOp)
	}()
	return in.crashWhenReleaseWaits(ctx, wctx)
}

// crashWhenReleaseWaits crashes the server (immediate restart) as soon as a
// release waits for a row lock, watching until wctx ends; it says whether
// it did.
func (in *injector) crashWhenReleaseWaits(ctx, wctx context.Context) (bool, error) {
	for wctx.Err() == nil {
		var waiting bool
		if err := in.admin.QueryRow(wctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE query LIKE '%distributed\_lock\_release(%' AND wait_event_type = 'Lock'
			  AND pid <> pg_backend_pid())`).Scan(&waiting); err != nil {
			return false, nil
		}
		if waiting {
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer rcancel()
			return true, in.crashRestart(rctx)
		}
		sleepCtx(wctx, 2*time.Millisecond)
	}
	return false, nil
}
