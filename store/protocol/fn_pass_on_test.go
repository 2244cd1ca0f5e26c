package protocol_test

import (
	"testing"
	"time"
)

// The caller has freed the key's row at ts (the states are free rows).
func passOnCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS returned FROM distributed_lock_pass_on(key => $1, ts => clock_timestamp())`, []any{key}
}

// reviveUnderQueueLockSQL: an enqueue beside the lease that ended, in
// flight: holding the key's queue lock shared, it makes the key's lapsed
// record live again (as its new record would be), then commits.
const reviveUnderQueueLockSQL = `WITH q AS (SELECT distributed_lock_try_queue_lock($1) AS x)
UPDATE distributed_lock_waiter SET seen_until = clock_timestamp() + interval '30 seconds'
WHERE lock_key = $1 AND EXISTS (SELECT FROM q)`

func TestPassOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_pass_on")
	f.run(t, []fnCase{
		{name: "queued: handed to the head", state: free().queued(w1, w2), call: passOnCall, want: want{
			row: handedTo(w1, "acquired", other), waiters: waiters(w2), notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "its only waiter lapsed: a wake-up", state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: passOnCall, want: want{
			row: untouched, waiters: waiters(w1), notify: []notifyWant{wakeUp}}},
		{name: "its only waiter lapsed, on a wake channel: woken there", state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second, channel: chanA}),
			call: passOnCall, want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanA}}, notify: []notifyWant{wakeUp.on(chanA)}}},
		{name: "queued on wake channels: handed to the head on its channel, the next one told", state: free().queuedOn(chanA, w1).queuedOn(chanB, w2),
			call: passOnCall, want: want{row: handedTo(w1, "acquired", other), waiters: []waiterWant{{owner: w2, channel: chanB}},
				notify: []notifyWant{handOffTo(w1, "acquired").on(chanA), handOffTo(w1, "acquired").on(chanB)}}},
		{name: "watched, nobody queued: nobody to wake", state: free().waking(), call: passOnCall, want: want{row: untouched}},
		{name: "an enqueue beside in flight (its record not yet live): waited for, then handed to it",
			state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: passOnCall,
			during: whileLocked(reviveUnderQueueLockSQL, true),
			want:   want{row: handedTo(w1, "acquired", other), notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "the queue lock held past the bound (an enqueue in flight, or any role): a wake-up, not a wait",
			state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: passOnCall,
			during: whileLocked(lockQueueSharedSQL, false),
			want:   want{row: untouched, waiters: waiters(w1), notify: []notifyWant{wakeUp}}},
	})
}
