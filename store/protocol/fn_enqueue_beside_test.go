package protocol_test

import (
	"testing"
	"time"
)

// besideArgs are distributed_lock_enqueue_beside's arguments but the key,
// as enqueueArgs's: a minute's lease, a ten-second claim window, a record
// seen for thirty seconds.
func besideCall(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_enqueue_beside(key => $1, owner => $2, ttl_us => $3, claim_us => $4,
		seen_for_us => $5, lease_metadata => NULL, event_actor => NULL, log_grants => false, lock_delay_us => 0,
		channel => NULL)`,
		[]any{key, me, time.Minute.Microseconds(), (10 * time.Second).Microseconds(), (30 * time.Second).Microseconds()}
}

// releaseUnderQueueLockSQL: a release that found nobody to hand the key to,
// holding the queue lock exclusively; an enqueue beside it does not wait
// for it.
const releaseUnderQueueLockSQL = `WITH q AS (SELECT distributed_lock_queue_lock($1, true, interval '5 seconds') AS x)
UPDATE distributed_lock SET released_at = clock_timestamp() WHERE lock_key = $1 AND slot = 0 AND EXISTS (SELECT FROM q)`

func TestEnqueueBeside(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_enqueue_beside")
	nothing := func(s state) want {
		w := want{nullKey: true, row: untouched}
		for _, pw := range s.waiters {
			w.waiters = append(w.waiters, waiterWant{owner: pw.owner})
		}
		return w
	}
	queued := heldBy(other).queued(w1)
	alreadyQueued := heldBy(other).queued(w1, me)
	f.run(t, []fnCase{
		{name: "held by another, queued, hand-offs promised: queued beside, the row untouched", state: queued,
			call: besideCall, want: want{outcome: "queued", owner: other, token: keptToken, waiterID: me, row: untouched,
				waiters: []waiterWant{{owner: w1}, {owner: me, seenFor: 30 * time.Second}}, check: dbNowReturned,
				refusal: placeIn(2, 2)}},
		{name: "nobody ever waited: nothing done", state: heldBy(other), call: besideCall, want: nothing(heldBy(other))},
		{name: "the caller's live record: nothing done", state: alreadyQueued, call: besideCall, want: nothing(alreadyQueued)},
		{name: "free: nothing done", state: free().queued(w1), call: besideCall, want: nothing(free().queued(w1))},
		{name: "a release holds the queue lock: nothing done, no wait", state: queued, call: besideCall,
			during: whileLocked(releaseUnderQueueLockSQL, false), want: nothing(queued)},
		{name: "another role holds the queue lock: nothing done, no wait", state: queued, call: besideCall,
			during: whileLocked(lockQueueExclusiveSQL, false), want: nothing(queued)},
		{name: "held by another who waits for a key the caller holds: deadlock, not queued, nothing handed on",
			state: queued.and(also{name: "b", state: heldBy(me).queued(other)}), call: besideCall, want: want{
				outcome: "deadlock", owner: other, token: keptToken, row: untouched, waiters: waiters(w1),
				refusal: queueOf(1), events: []eventWant{refusedWait(me, me)},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					dbNowReturned(t, result, p, after)
					want := cycleOf(p, me, "", other, "b")
					if !sameJSON(result["cycle"], want) {
						t.Errorf("cycle %v; want %v", result["cycle"], want)
					}
				}}},
	})
}
