package protocol_test

import (
	"testing"
	"time"
)

func queueLengthCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_queue_length(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// A refusal's queue length counts the live waiters only.
func TestQueueLength(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_length")
	lapsedWaiter := waiterRow{owner: w1, seenFor: -time.Second}
	f.run(t, []fnCase{
		{name: "no row, nobody queued", state: noRow(), call: queueLengthCall, want: is(0)},
		{name: "held, nobody queued", state: heldBy(other), call: queueLengthCall, want: is(0)},
		{name: "held, two queued", state: heldBy(other).queued(w1, w2), call: queueLengthCall, want: isQueued(2, w1, w2)},
		{name: "held, a lapsed waiter and a live one", state: heldBy(other).withWaiter(lapsedWaiter).queued(w2),
			call: queueLengthCall, want: isQueued(1, w1, w2)},
	})
}
