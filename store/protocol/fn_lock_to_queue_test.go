package protocol_test

import (
	"testing"
	"time"
)

// lockToQueueFor is the call of an enqueue for a lease of mode, as a
// waiter record names it: "" (NULL) for the key itself, or a group
// holder's, shared or semaphore (of n permits).
func lockToQueueFor(mode string, n int) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		var m *string
		if mode != "" {
			m = &mode
		}
		return `SELECT (t.r).owner_id AS locked, t.beside FROM distributed_lock_lock_to_queue(key => $1, owner => $2,
			seen_for_us => $3, mode => $4, n => $5) t`, []any{key, me, (30 * time.Second).Microseconds(), m, nonZero(n)}
	}
}

var lockToQueueCall = lockToQueueFor("", 0)

// setWakeSQL: another enqueue that queues under the row lock, making the
// key's releases hand off for a minute, then commits.
const setWakeSQL = `UPDATE distributed_lock SET wake_until = clock_timestamp() + interval '1 minute' WHERE lock_key = $1 AND slot = 0`

// An enqueue that cannot queue beside the others takes the row for update;
// one that waited for another's change first looks again, and queues
// beside them if that change made it possible: behind an exclusive lease,
// or a running group of the kind it waits for.
func TestLockToQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_lock_to_queue")
	// answered: the row it returns (its owner; nil: NULL columns) and
	// whether it queues beside the others.
	answered := func(owner any, beside bool) func(*testing.T, map[string]any, prepared, observed) {
		return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
			t.Helper()
			if result["locked"] != owner || result["beside"] != beside {
				t.Errorf("row of %v, beside %v; want %v, %v", result["locked"], result["beside"], owner, beside)
			}
		}
	}
	locked := func(owner string) want { return want{row: untouched, check: answered(owner, false)} }
	f.run(t, []fnCase{
		{name: "held by another, nobody waited: the row, locked", state: heldBy(other), call: lockToQueueCall,
			want: locked(other)},
		{name: "no row: nothing locked", state: noRow(), call: lockToQueueCall,
			want: want{row: untouched, check: answered(nil, false)}},
		{name: "another enqueue sets the wake-up meanwhile: beside the others, nothing held", state: heldBy(other),
			call: lockToQueueCall, during: whileRowChanges(setWakeSQL),
			want: want{row: rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{time.Minute - slack, time.Minute}},
				check: answered(nil, true)}},
		{name: "the row locked by a change that does not let it beside: waited for, then locked", state: heldBy(other),
			call: lockToQueueCall, during: whileRowChanges(`UPDATE distributed_lock SET renew_count = renew_count + 1 WHERE lock_key = $1 AND slot = 0`),
			want: want{row: rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, renewals: 1},
				check: answered(other, false)}},
		{name: "a semaphore's group, nobody changing its row: the row, locked", state: semaphoreOf(2, other),
			call: lockToQueueFor("semaphore", 2), want: locked(groupOwner)},
		{name: "a semaphore's group whose wake-up another enqueue sets meanwhile: beside the others", state: semaphoreOf(2, other),
			call: lockToQueueFor("semaphore", 2), during: whileRowChanges(setWakeSQL),
			want: want{row: rowWant{owner: groupOwner, token: keptToken, groupEnd: true, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, mode: "semaphore", permits: 2,
				wakes: &span{time.Minute - slack, time.Minute}}, check: answered(nil, true)}},
		{name: "a shared group, for a permit: not beside them", state: sharedBy(other),
			call: lockToQueueFor("semaphore", 2), during: whileRowChanges(setWakeSQL),
			want: want{row: rowWant{owner: groupOwner, token: keptToken, groupEnd: true, ttl: time.Minute, kind: "acquired",
				prevOwner: "earlier", prevToken: keptPrevious, mode: "shared",
				wakes: &span{time.Minute - slack, time.Minute}}, check: answered(groupOwner, false)}},
	})
}
