package protocol_test

import (
	"testing"
	"time"
)

// The owner calls the internal function directly with the key's row locked
// for update, as distributed_lock_enqueue_shared does once its attempt was
// refused.
func queueForHolderCall(permits int) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT q.* FROM (SELECT 1 FROM distributed_lock l WHERE l.lock_key = $1 AND l.slot = 0 FOR NO KEY UPDATE) r,
			distributed_lock_queue_for_holder(key => $1, owner => $2, ttl_us => $3, n => $4, claim_us => $5,
				seen_for_us => $6, lease_metadata => NULL, event_actor => NULL, log_grants => false, channel => NULL,
				lazy_commit => false, joining => false, ts => clock_timestamp()) q`,
			[]any{key, me, time.Minute.Microseconds(), nonZero(permits), (10 * time.Second).Microseconds(),
				(30 * time.Second).Microseconds()}
	}
}

// A refused holder is queued with the kind of lease it waits for, behind
// whoever is ahead.
func TestQueueForHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_for_holder")
	f.run(t, []fnCase{
		{name: "an exclusive lease runs: queued behind it", state: heldBy(other), call: queueForHolderCall(0), want: want{
			outcome: "queued", owner: other, token: keptToken, waiterID: me, check: dbNowReturned,
			remaining: &span{50*time.Second - slack, 50 * time.Second},
			row: rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{time.Minute - slack, time.Minute}},
			waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second, mode: "shared"}}, refusal: placeIn(1, 1)}},
		{name: "a full semaphore, a writer queued: queued behind it", state: semaphoreOf(2, other, w1).queued(w2),
			call: queueForHolderCall(2), want: want{
				outcome: "queued", owner: groupOwner, token: keptToken, waiterID: me, check: dbNowReturned,
				remaining: &span{50*time.Second - slack, 50 * time.Second},
				row: rowWant{owner: groupOwner, token: keptToken, groupEnd: true, ttl: time.Minute, kind: "acquired",
					prevOwner: "earlier", prevToken: keptPrevious, mode: "semaphore", permits: 2,
					wakes: &span{time.Minute - slack, time.Minute}},
				waiters: []waiterWant{{owner: w2}, {owner: me, seenFor: 30 * time.Second, mode: "semaphore", permits: 2}},
				refusal: placeIn(2, 2)}},
	})
}
