package protocol_test

import (
	"testing"
	"time"
)

// A group kept for its waiters is not granted to an owner who holds none of
// its slots; a holder's renewal overtakes nobody.
func TestQueuedAhead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queued_ahead")
	aheadOf := func(owner string) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_queued_ahead(l, $2, c.ts)`, owner)
	}
	lapsed := waiterRow{owner: w1, seenFor: -time.Second}
	f.run(t, []fnCase{
		{name: "permits held, one queued: a newcomer", state: semaphoreOf(2, other).queued(w1), call: aheadOf(w2), want: isQueued(true, w1)},
		{name: "permits held, one queued: a holder", state: semaphoreOf(2, other).queued(w1), call: aheadOf(other), want: isQueued(false, w1)},
		{name: "shared, one queued: an owner whose slot was released", state: sharedBy(other).holding(releasedSlot(w2)).queued(w1),
			call: aheadOf(w2), want: isQueued(true, w1)},
		{name: "shared, one queued: an owner whose slot ran out", state: sharedBy(other).holding(lapsedSlot(w2)).queued(w1),
			call: aheadOf(w2), want: isQueued(true, w1)},
		{name: "nobody queued", state: semaphoreOf(2, other), call: aheadOf(w2), want: is(false)},
		{name: "its only waiter lapsed", state: sharedBy(other).withWaiter(lapsed).waking(), call: aheadOf(w2), want: isQueued(false, w1)},
	})
}
