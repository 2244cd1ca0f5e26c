package protocol_test

import (
	"testing"
	"time"
)

func queueLiveCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_queue_live(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

func TestQueueLive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_live")
	lapsedWaiter := waiterRow{owner: w1, seenFor: -time.Second}
	f.run(t, []fnCase{
		{name: "no row, nobody queued", state: noRow(), call: queueLiveCall, want: is(false)},
		{name: "held, nobody queued", state: heldBy(other), call: queueLiveCall, want: is(false)},
		{name: "held, queued", state: heldBy(other).queued(w1), call: queueLiveCall, want: isQueued(true, w1)},
		{name: "held, its only waiter lapsed", state: heldBy(other).withWaiter(lapsedWaiter), call: queueLiveCall, want: isQueued(false, w1)},
		{name: "held, a lapsed waiter and a live one", state: heldBy(other).withWaiter(lapsedWaiter).queued(w2), call: queueLiveCall,
			want: isQueued(true, w1, w2)},
	})
}
