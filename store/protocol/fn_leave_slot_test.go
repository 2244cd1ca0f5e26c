package protocol_test

import "testing"

func leaveSlotCall(key string, p prepared) (string, []any) {
	return `SELECT distributed_lock_leave_slot(key => $1, id => $2, log_release => false, event_actor => NULL,
		ts => clock_timestamp()) AS result`, []any{key, p.waiter(me)}
}

// A record that leaves gives back a slot handed to it and unclaimed; one
// handed nothing leaves nothing to give back.
func TestLeaveSlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_leave_slot")
	f.run(t, []fnCase{
		{name: "queued, handed nothing", state: sharedBy(other).queued(me), call: leaveSlotCall,
			want: want{value: false, row: untouched, waiters: waiters(me)}},
	})
}
