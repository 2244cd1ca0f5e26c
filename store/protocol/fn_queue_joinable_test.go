package protocol_test

import (
	"testing"
	"time"
)

// A waiter joins beside others only the running group of its own kind
// whose hand-offs are promised for longer than its record (30s) lives.
func TestQueueJoinable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_joinable")
	const seenFor = 30 * time.Second
	joinable := func(permits int) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_queue_joinable(l, $2, $3, c.ts)`, nonZero(permits), seenFor.Microseconds())
	}
	wakingFor := func(s state, d time.Duration) state {
		return s.with(func(r *lockRow) { r.wakeFor = d })
	}
	f.run(t, []fnCase{
		{name: "a semaphore's queue, hand-offs promised for a minute", state: semaphoreOf(2, other, w1).queued(w2),
			call: joinable(2), want: isQueued(true, w2)},
		{name: "a shared group's queue", state: sharedBy(other).queued(w1), call: joinable(0), want: isQueued(true, w1)},
		{name: "hand-offs promised for less than the record lives", state: wakingFor(semaphoreOf(2, other, w1), 20*time.Second),
			call: joinable(2), want: is(false)},
		{name: "nobody ever waited (no wake-up)", state: semaphoreOf(2, other, w1), call: joinable(2), want: is(false)},
		{name: "a semaphore of other permits", state: semaphoreOf(2, other, w1).queued(w2), call: joinable(3), want: isQueued(false, w2)},
		{name: "shared, a permit asked", state: sharedBy(other).queued(w1), call: joinable(2), want: isQueued(false, w1)},
		{name: "the group ended", state: groupEnded(2).queued(w1), call: joinable(2), want: isQueued(false, w1)},
		{name: "held exclusively", state: heldBy(other).queued(w1), call: joinable(0), want: isQueued(false, w1)},
	})
}
