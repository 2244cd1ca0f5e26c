package protocol_test

import (
	"testing"
	"time"
)

// An owner's live record keeps its place and id and carries the lease now
// asked for, the kind it waits for included; an owner without one gets
// NULL and the queue is left alone.
func TestTakeOverWaiter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_take_over_waiter")
	takenOver := func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		got := after.waiters[1]
		if id, ok := result["result"].(int64); !ok || id != got.ID {
			t.Errorf("result %v; want the id of me's record, %d", result["result"], got.ID)
		}
		hasAskedLease(t, got)
	}
	none := func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["result"] != nil {
			t.Errorf("result %v; want NULL", result["result"])
		}
	}
	mine := waiterRow{owner: me, seenFor: 10 * time.Second, waitedFor: time.Second}
	f.run(t, []fnCase{
		{name: "its record, behind a waiter", state: heldBy(other).queued(w1).withWaiter(mine).queued(w2),
			call: writeWaiterCall(f.fn, "", 0), want: want{row: untouched, waiters: []waiterWant{{owner: w1},
				{owner: me, seenFor: 30 * time.Second, channel: chanA}, {owner: w2}}, check: takenOver}},
		{name: "its record for the key, now for a permit of two", state: heldBy(other).queued(w1).withWaiter(mine),
			call: writeWaiterCall(f.fn, "semaphore", 2), want: want{row: untouched, waiters: []waiterWant{{owner: w1},
				{owner: me, seenFor: 30 * time.Second, channel: chanA, mode: "semaphore", permits: 2}}, check: takenOver}},
		{name: "no record", state: heldBy(other).queued(w1), call: writeWaiterCall(f.fn, "", 0),
			want: want{row: untouched, waiters: waiters(w1), check: none}},
		{name: "its record lapsed", state: heldBy(other).queued(w1).withWaiter(waiterRow{owner: me, seenFor: -time.Second}),
			call: writeWaiterCall(f.fn, "", 0), want: want{row: untouched, waiters: []waiterWant{{owner: w1}, {owner: me}}, check: none}},
	})
}
