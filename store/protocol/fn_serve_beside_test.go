package protocol_test

import "testing"

func serveBesideCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_serve_beside(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// The room goes to the first waiter no other release is serving, while no
// waiter ahead of it waits for anything else; a waiter whose record is
// only locked a moment (its heartbeat) is waited for, not passed over.
func TestServeBeside(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_serve_beside")
	twoPermitWaiters := semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2)).withWaiter(permitWaiter(w2, 2))
	f.run(t, []fnCase{
		{name: "a permit free: the first waiter served", state: twoPermitWaiters, call: serveBesideCall,
			want: want{row: untouched, waiters: []waiterWant{{owner: w2, mode: "semaphore", permits: 2}}, check: handedBy(w1),
				slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore")}}},
		{name: "the first being served by another release: the next served", state: twoPermitWaiters, call: serveBesideCall,
			during: whileLocked(serveFirstWaiterSQL, false),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, mode: "semaphore", permits: 2}}, check: handedBy(w2),
				slots:  []slotWant{asPrepared, slotHandedTo(w2, "acquired")},
				notify: []notifyWant{slotHandOffTo(w2, "acquired", "semaphore")}}},
		{name: "the first refreshed by its heartbeat: waited for and served", state: twoPermitWaiters, call: serveBesideCall,
			during: whileLocked(lockFirstWaiterSQL, true),
			want: want{row: untouched, waiters: []waiterWant{{owner: w2, mode: "semaphore", permits: 2}}, check: handedBy(w1),
				slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore")}}},
		{name: "a writer at the head, locked: nobody behind it served",
			state: semaphoreOf(2, other).queued(w1).withWaiter(permitWaiter(w2, 2)), call: serveBesideCall,
			during: whileLocked(lockFirstWaiterSQL, false), want: want{row: untouched, waiters: waiters(w1, w2), check: handedBy("")}},
		{name: "every permit held: nobody served", state: semaphoreOf(1, other).withWaiter(permitWaiter(w1, 1)),
			call: serveBesideCall, want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
		{name: "nobody queued", state: semaphoreOf(2, other), call: serveBesideCall, want: want{row: untouched, check: handedBy("")}},
	})
}
