package protocol_test

import (
	"testing"
	"time"
)

// The owner calls the internal function directly with the key's row locked,
// as distributed_lock_enqueue does.
func enqueueLockedCall(key string, _ prepared) (string, []any) {
	return `SELECT q.* FROM (SELECT l FROM distributed_lock l WHERE l.lock_key = $1 AND l.slot = 0 FOR NO KEY UPDATE) r,
		distributed_lock_enqueue_locked(r => r.l, owner => $2, ttl_us => $3, claim_us => $4, seen_for_us => $5,
			lease_metadata => NULL, event_actor => NULL, event_detail => NULL, log_grants => false,
			lock_delay_us => 0, channel => NULL) q`,
		[]any{key, me, time.Minute.Microseconds(), (10 * time.Second).Microseconds(), (30 * time.Second).Microseconds()}
}

// Under the row lock: a free key is taken, a held one queued behind.
func TestEnqueueLocked(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_enqueue_locked")
	f.run(t, []fnCase{
		{name: "free: taken", state: free(), call: enqueueLockedCall, want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, check: dbNowReturned,
			row: func() rowWant { w := grantTo(me, "acquired", time.Minute, keptToken); w.prevOwner = other; return w }()}},
		{name: "held by another: queued", state: heldBy(other), call: enqueueLockedCall, want: want{
			outcome: "queued", owner: other, token: keptToken, waiterID: me, check: dbNowReturned,
			row: rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{time.Minute - slack, time.Minute}},
			waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second}}, refusal: placeIn(1, 1)}},
	})
}
