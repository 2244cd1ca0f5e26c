package protocol_test

import (
	"testing"
	"time"
)

func serveSetRecordCall(key string, p prepared) (string, []any) {
	return `SELECT distributed_lock_serve_set_record(rec => w, ts => clock_timestamp()) AS result
		FROM distributed_lock_waiter w WHERE w.waiter_id = $2 AND w.lock_key = $1`, []any{key, p.waiter(me)}
}

// A set's record is granted the lease it asks for: the key, or a slot.
func TestServeSetRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_serve_set_record")
	f.run(t, []fnCase{
		{name: "the key itself, free: handed", state: free().queuedSet(me), call: serveSetRecordCall,
			want: want{value: true, row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")}}},
		{name: "a semaphore's permit, full: no room",
			state: semaphoreOf(1, other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, mode: "semaphore", permits: 1}),
			call:  serveSetRecordCall, want: want{value: false, row: untouched, waiters: waiters(me)}},
	})
}
