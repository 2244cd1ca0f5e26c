package protocol_test

import (
	"testing"
	"time"
)

func TestPromised(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_promised")
	promised := ruleCall(`distributed_lock_promised(l, c.ts)`)
	live := waiterRow{owner: w1, seenFor: 30 * time.Second}
	f.run(t, []fnCase{
		{name: "free, queued", state: free().queued(w1), call: promised, want: isQueued(true, w1)},
		{name: "free, nobody queued", state: free(), call: promised, want: is(false)},
		{name: "free, its only waiter lapsed", state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: promised, want: isQueued(false, w1)},
		{name: "free, a live waiter but no wake-up (nobody said it waits)", state: state{row: free().row, waiters: []waiterRow{live}},
			call: promised, want: isQueued(false, w1)},
		{name: "free, a live waiter, the wake-up ran out", state: state{row: free().with(func(r *lockRow) { r.wakeFor = -time.Second }).row, waiters: []waiterRow{live}},
			call: promised, want: isQueued(false, w1)},
		{name: "held, queued: kept for them once free", state: heldBy(other).queued(w1), call: promised, want: isQueued(true, w1)},
	})
}
