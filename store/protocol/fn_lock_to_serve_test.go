package protocol_test

import "testing"

// The owner calls the internal function directly, for waiter w1's record
// and the key's row; the result is the owner of the record it locked.
func lockToServeCall(key string, p prepared) (string, []any) {
	return `SELECT (distributed_lock_lock_to_serve(id => $1, r => l, ts => clock_timestamp())).owner_id AS result
		FROM distributed_lock l WHERE l.lock_key = $2 AND l.slot = 0`, []any{p.waiter(w1), key}
}

// A record still waiting for the group's kind is locked, after a wait for
// a transaction that holds it for a moment (its heartbeat); a wait that
// goes on past the bound gives it up, as a record that waits for another
// kind is. One another release serves (FOR UPDATE) is passed over at once.
func TestLockToServe(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_lock_to_serve")
	queued := semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2))
	f.run(t, []fnCase{
		{name: "a permit waiter", state: queued, call: lockToServeCall, want: isQueued(w1, w1)},
		{name: "locked by its heartbeat, which commits: waited for", state: queued, call: lockToServeCall,
			during: whileLocked(lockFirstWaiterSQL, true), want: isQueued(w1, w1)},
		{name: "locked past the wait's bound: passed over", state: queued, call: lockToServeCall,
			during: whileLocked(lockFirstWaiterSQL, false), want: isQueued(nil, w1)},
		{name: "served by another release: passed over", state: queued, call: lockToServeCall,
			during: whileLocked(serveFirstWaiterSQL, false), want: isQueued(nil, w1)},
		{name: "a waiter for other permits", state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 3)),
			call: lockToServeCall, want: isQueued(nil, w1)},
		{name: "a reader's record on a semaphore", state: semaphoreOf(2, other).withWaiter(sharedWaiter(w1)),
			call: lockToServeCall, want: isQueued(nil, w1)},
	})
}
