package protocol_test

import "testing"

// The owner calls the internal function directly, with waiter w1's record.
func grantWaiterCall(_ string, p prepared) (string, []any) {
	return `SELECT distributed_lock_grant_waiter(w => w, ts => clock_timestamp()) AS result
		FROM distributed_lock_waiter w WHERE w.waiter_id = $1`, []any{p.waiter(w1)}
}

func TestGrantWaiter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_grant_waiter")
	f.run(t, []fnCase{
		{name: "free", state: free().queued(w1, w2), call: grantWaiterCall, want: want{
			row: handedTo(w1, "acquired", other), waiters: waiters(w2),
			notify: []notifyWant{handOffTo(w1, "acquired")}, check: handedBy(w1)}},
		{name: "on wake channels: the waiter's, and the next in line's", state: free().queuedOn(chanA, w1).queuedOn(chanB, w2).queuedOn(chanC, me),
			call: grantWaiterCall, want: want{
				row: handedTo(w1, "acquired", other), waiters: []waiterWant{{owner: w2, channel: chanB}, {owner: me, channel: chanC}},
				notify: []notifyWant{handOffTo(w1, "acquired").on(chanA), handOffTo(w1, "acquired").on(chanB)}, check: handedBy(w1)}},
		{name: "expired: a steal, logged", state: lapsed(other).queued(w1), call: grantWaiterCall, want: want{
			row: handedTo(w1, "stolen", other), events: []eventWant{grantEvent("stolen", w1, w1, other)},
			notify: []notifyWant{handOffTo(w1, "stolen")}, check: handedBy(w1)}},
		{name: "a semaphore's group ended: an exclusive lease now", state: groupEnded(2).queued(w1), call: grantWaiterCall, want: want{
			row:    handedFromGroup(w1, 2),
			notify: []notifyWant{handOffTo(w1, "acquired")}, check: handedBy(w1)}},
	})
}
