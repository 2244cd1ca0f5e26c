package protocol_test

import (
	"testing"
	"time"
)

// A waiter queues beside the others only behind another owner's running
// exclusive lease whose hand-offs are promised for longer than its record
// (30s) lives, and only when it has no live record there to take over.
func TestLeaseJoinable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_lease_joinable")
	const seenFor = 30 * time.Second
	joinable := ruleCall(`distributed_lock_lease_joinable(l, $2, $3, c.ts)`, me, seenFor.Microseconds())
	wakingFor := func(s state, d time.Duration) state {
		return s.with(func(r *lockRow) { r.wakeFor = d })
	}
	f.run(t, []fnCase{
		{name: "held by another, queued, hand-offs promised for a minute", state: heldBy(other).queued(w1),
			call: joinable, want: isQueued(true, w1)},
		{name: "hand-offs promised for less than the record lives", state: wakingFor(heldBy(other).queued(w1), 20*time.Second),
			call: joinable, want: isQueued(false, w1)},
		{name: "nobody ever waited (no wake-up)", state: heldBy(other), call: joinable, want: is(false)},
		{name: "held by the caller", state: heldBy(me).queued(w1), call: joinable, want: isQueued(false, w1)},
		{name: "free", state: free().queued(w1), call: joinable, want: isQueued(false, w1)},
		{name: "lapsed", state: lapsed(other).queued(w1), call: joinable, want: isQueued(false, w1)},
		{name: "a shared group", state: sharedBy(other).queued(w1), call: joinable, want: isQueued(false, w1)},
		{name: "the caller has a live record to take over", state: heldBy(other).queued(w1, me),
			call: joinable, want: isQueued(false, w1, me)},
	})
}
