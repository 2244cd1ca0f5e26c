package protocol_test

import (
	"testing"
	"time"
)

// queuePositionOf asks for the place of waiter (by owner).
func queuePositionOf(waiter string) func(string, prepared) (string, []any) {
	return func(key string, p prepared) (string, []any) {
		return `SELECT distributed_lock_queue_position(key => $1, id => $2, ts => clock_timestamp()) AS result`,
			[]any{key, p.waiter(waiter)}
	}
}

// A waiter's place counts the live waiters up to and including it; a
// record that lapsed has none.
func TestQueuePosition(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_position")
	lapsedWaiter := waiterRow{owner: w1, seenFor: -time.Second}
	f.run(t, []fnCase{
		{name: "at the head", state: heldBy(other).queued(me, w1), call: queuePositionOf(me), want: isQueued(1, me, w1)},
		{name: "third", state: heldBy(other).queued(w1, w2, me), call: queuePositionOf(me), want: isQueued(3, w1, w2, me)},
		{name: "behind a lapsed waiter", state: heldBy(other).withWaiter(lapsedWaiter).queued(me), call: queuePositionOf(me),
			want: isQueued(1, w1, me)},
		{name: "its own record lapsed", state: heldBy(other).queued(w2).withWaiter(waiterRow{owner: me, seenFor: -time.Second}),
			call: queuePositionOf(me), want: isQueued(nil, w2, me)},
	})
}
