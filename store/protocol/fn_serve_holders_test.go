package protocol_test

import "testing"

func serveHoldersCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_serve_holders(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// The head of the queue is served while it waits for a slot the group has
// room for: consecutive readers together, freed permits in turn, and no
// further than a writer.
func TestServeHolders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_serve_holders")
	f.run(t, []fnCase{
		{name: "shared: consecutive readers served, stopping at a writer",
			state: sharedBy(other).withWaiter(sharedWaiter(w1)).withWaiter(sharedWaiter(w2)).queued(me), call: serveHoldersCall,
			want: want{row: untouched, waiters: waiters(me), check: handedBy(w1),
				slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired"), slotHandedTo(w2, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "shared"), slotHandOffTo(w2, "acquired", "shared")}}},
		{name: "a semaphore: as many served as there are permits",
			state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2)).withWaiter(permitWaiter(w2, 2)), call: serveHoldersCall,
			want: want{row: untouched, waiters: []waiterWant{{owner: w2, mode: "semaphore", permits: 2}}, check: handedBy(w1),
				slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore")}}},
		{name: "a free key: the head's group formed, the readers served",
			state: free().withWaiter(sharedWaiter(w1)).withWaiter(sharedWaiter(w2)), call: serveHoldersCall,
			want: want{row: formed("shared", 0, "acquired", other, keptToken), check: handedBy(w1),
				slots:  []slotWant{slotHandedTo(w1, "acquired"), slotHandedTo(w2, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "shared"), slotHandOffTo(w2, "acquired", "shared")}}},
		{name: "a writer at the head: nobody served", state: sharedBy(other).queued(w1).withWaiter(sharedWaiter(w2)), call: serveHoldersCall,
			want: want{row: untouched, waiters: waiters(w1, w2), check: handedBy("")}},
		{name: "a head waiting for other permits: nobody served", state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 3)),
			call: serveHoldersCall, want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
		{name: "a full semaphore: nobody served", state: semaphoreOf(1, other).withWaiter(permitWaiter(w1, 1)),
			call: serveHoldersCall, want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
	})
}
