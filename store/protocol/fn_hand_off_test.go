package protocol_test

import (
	"testing"
	"time"
)

// The owner (the tests' role) calls the internal function directly, as the
// protocol functions do with the key's row locked.
func handOffCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_hand_off(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// handOffBesideCall is the hand-off of a holder's release beside others.
func handOffBesideCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_hand_off(key => $1, ts => clock_timestamp(), beside => true) AS result`, []any{key}
}

// handedBy: the call returns the id of waiter owner, or NULL for "".
func handedBy(owner string) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		var want any
		if owner != "" {
			want = p.waiter(owner)
		}
		if !sameJSON(result["result"], want) {
			t.Errorf("result %v; want %v (%s)", result["result"], want, orString(owner, "nobody"))
		}
	}
}

// leaveFirstWaiterSQL: the key's first waiter leaves (its record deleted,
// committed once the call waits for it).
const leaveFirstWaiterSQL = `DELETE FROM distributed_lock_waiter WHERE waiter_id = (SELECT min(waiter_id) FROM distributed_lock_waiter WHERE lock_key = $1)`

func TestHandOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_hand_off")
	asking := waiterRow{owner: w1, seenFor: 30 * time.Second, ttl: 2 * time.Minute, claim: 5 * time.Second,
		metadata: `{"pid": 42}`, logGrants: true, actor: "w1-svc", waitedFor: 3 * time.Second}
	f.run(t, []fnCase{
		{name: "free, queued", state: free().queued(w1, w2), call: handOffCall, want: want{
			row: handedTo(w1, "acquired", other), waiters: waiters(w2),
			notify: []notifyWant{handOffTo(w1, "acquired")}, check: handedBy(w1)}},
		{name: "expired, queued: a steal, logged", state: lapsed(other).queued(w1), call: handOffCall, want: want{
			row: handedTo(w1, "stolen", other), events: []eventWant{grantEvent("stolen", w1, w1, other)},
			notify: []notifyWant{handOffTo(w1, "stolen")}, check: handedBy(w1)}},
		{name: "lapsed hand-off, queued: a steal", state: lapsedHandOffTo(w1).queued(w2), call: handOffCall, want: want{
			row: handedTo(w2, "stolen", w1), events: []eventWant{grantEvent("stolen", w2, w2, w1)},
			notify: []notifyWant{handOffTo(w2, "stolen")}, check: handedBy(w2)}},
		{name: "free, the waiter's own lease and log", state: free().withWaiter(asking), call: handOffCall, want: want{
			row: rowWant{owner: w1, token: drawnToken, expires: about(5 * time.Second), ttl: 2 * time.Minute,
				kind: "acquired", prevOwner: other, prevToken: keptToken, handedTo: w1, metadata: `{"pid": 42}`},
			events: []eventWant{{kind: "acquired", owner: w1, token: drawnToken, actor: "w1-svc", prevOwner: other, prevToken: keptToken,
				detail: map[string]any{"waited_ms": anyValue, "waiter_id": waiterRef(w1)}}},
			notify: []notifyWant{{handOffTo: w1, kind: "acquired", ttl: 2 * time.Minute, window: 5 * time.Second}},
			check:  handedBy(w1)}},
		{name: "free, a claim window longer than the lease", state: free().withWaiter(waiterRow{owner: w1, seenFor: time.Minute, ttl: 3 * time.Second, claim: time.Minute}),
			call: handOffCall, want: want{
				row: rowWant{owner: w1, token: drawnToken, expires: about(3 * time.Second), ttl: 3 * time.Second,
					kind: "acquired", prevOwner: other, prevToken: keptToken, handedTo: w1},
				notify: []notifyWant{{handOffTo: w1, kind: "acquired", ttl: 3 * time.Second, window: 3 * time.Second}},
				check:  handedBy(w1)}},
		{name: "expired, in its lock-delay, queued: nothing granted", state: delayedAfterExpiry(other).queued(w1), call: handOffCall,
			want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
		{name: "force-released, in its lock-delay, queued: nothing granted", state: delayedAfterRelease(other).queued(w1), call: handOffCall,
			want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
		{name: "expired, its lock-delay over, queued: a steal with the waiter's lock-delay",
			state: delayOver(other).withWaiter(waiterRow{owner: w1, seenFor: 30 * time.Second, lockDelay: 7 * time.Second}), call: handOffCall,
			want: want{row: func() rowWant { w := handedTo(w1, "stolen", other); w.lockDelay = 7 * time.Second; return w }(),
				events: []eventWant{grantEvent("stolen", w1, w1, other)},
				notify: []notifyWant{handOffTo(w1, "stolen")}, check: handedBy(w1)}},
		{name: "a running shared group, readers queued: served together, stopping at a writer",
			state: sharedBy(other).withWaiter(sharedWaiter(w1)).withWaiter(sharedWaiter(w2)).queued(me), call: handOffCall,
			want: want{row: untouched, waiters: waiters(me), check: handedBy(w1),
				slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired"), slotHandedTo(w2, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "shared"), slotHandOffTo(w2, "acquired", "shared")}}},
		{name: "a semaphore with room: its permit waiters served in turn",
			state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2)).withWaiter(permitWaiter(w2, 2)), call: handOffCall,
			want: want{row: untouched, waiters: []waiterWant{{owner: w2, mode: "semaphore", permits: 2}}, check: handedBy(w1),
				slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore")}}},
		{name: "a free key, readers queued: their group formed", state: free().withWaiter(sharedWaiter(w1)), call: handOffCall,
			want: want{row: formed("shared", 0, "acquired", other, keptToken), check: handedBy(w1),
				slots: []slotWant{slotHandedTo(w1, "acquired")}, notify: []notifyWant{slotHandOffTo(w1, "acquired", "shared")}}},
		{name: "a running shared group, a writer at the head: nothing granted",
			state: sharedBy(other).queued(w1).withWaiter(sharedWaiter(w2)), call: handOffCall,
			want: want{row: untouched, waiters: waiters(w1, w2), check: handedBy("")}},
		{name: "a full semaphore: nothing granted", state: semaphoreOf(1, other).withWaiter(permitWaiter(w1, 1)),
			call: handOffCall, want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
		{name: "beside, the first permit waiter being served by another release: the next served",
			state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2)).withWaiter(permitWaiter(w2, 2)), call: handOffBesideCall,
			during: whileLocked(serveFirstWaiterSQL, false),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, mode: "semaphore", permits: 2}}, check: handedBy(w2),
				slots:  []slotWant{asPrepared, slotHandedTo(w2, "acquired")},
				notify: []notifyWant{slotHandOffTo(w2, "acquired", "semaphore")}}},
		{name: "beside, a writer at the head: nobody behind it served",
			state: semaphoreOf(2, other).queued(w1).withWaiter(permitWaiter(w2, 2)), call: handOffBesideCall,
			want: want{row: untouched, waiters: waiters(w1, w2), check: handedBy("")}},
		{name: "a running shared group, a set's shared record at the head leaving while the head is locked: the writer behind it not granted",
			state: sharedBy(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, inSet: true, mode: "shared"}).queued(w1),
			call:  handOffCall, during: whileLocked(leaveFirstWaiterSQL, true),
			want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
		{name: "free, nobody queued", state: free(), call: handOffCall, want: want{row: untouched, check: handedBy("")}},
		{name: "free, its only waiter lapsed", state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: handOffCall,
			want: want{row: untouched, waiters: waiters(w1), check: handedBy("")}},
	})
}
