package protocol_test

import (
	"testing"
	"time"
)

func pollLockedCall(key string, p prepared) (string, []any) {
	return `SELECT c.ts IS NOT NULL AND c.cycle IS NULL AS result
		FROM distributed_lock_poll_locked(key => $1, id => $2, seen_for_us => $3) c`,
		[]any{key, p.waiter(me), (45 * time.Second).Microseconds()}
}

// Under the row lock a free key goes to the head of its queue, and a
// record still waiting is refreshed; a key without a row has no now.
func TestPollLocked(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_poll_locked")
	f.run(t, []fnCase{
		{name: "free, the caller at the head: handed to it", state: free().queued(me), call: pollLockedCall, want: want{
			value: true, row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")}}},
		{name: "held: refreshed", state: heldBy(other).queued(me), call: pollLockedCall, want: want{
			value: true, row: untouched, waiters: []waiterWant{{owner: me, seenFor: 45 * time.Second}}}},
		{name: "no row", state: noRow(), call: pollLockedCall, want: want{value: nil, row: untouched}},
	})
}
