package protocol_test

import (
	"testing"
	"time"
)

// The owner calls the internal function directly, as the protocol
// functions do with the key's row locked.
func settleCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_settle(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// settled is a group's row ended by the call: released now, keeping its mode
// and permits (0: shared).
func settled(permits int) rowWant {
	w := rowWant{owner: groupOwner, token: keptToken, expires: justNow, ttl: time.Minute, released: releasedNow,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, mode: "shared"}
	if permits > 0 {
		w.mode, w.permits = "semaphore", permits
	}
	return w
}

// A group ends when no slot holds a lease any more, and is passed on.
func TestSettle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_settle")
	f.run(t, []fnCase{
		{name: "a holder's lease runs: the group runs on", state: sharedBy(other).holding(lapsedSlot(w1)), call: settleCall,
			want: is(false)},
		{name: "every holder lapsed: ended, the lapsed leases with it", state: sharedBy().holding(lapsedSlot(other), releasedSlot(w1)),
			call: settleCall, want: want{value: true, row: settled(0), slots: []slotWant{slotReleasedNow(1, other), asPrepared}}},
		{name: "a semaphore's holders released, a writer queued: ended, handed to it", state: semaphoreOf(2).holding(releasedSlot(other)).queued(w1),
			call: settleCall, want: want{value: true, row: handedFromGroup(w1, 2), notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "every holder lapsed, watched, nobody live queued: a wake-up",
			state: sharedBy().holding(lapsedSlot(other)).withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: settleCall,
			want: want{value: true, row: func() rowWant { w := settled(0); w.wakes = &span{0, time.Minute}; return w }(),
				waiters: waiters(w1), notify: []notifyWant{wakeUp}, slots: []slotWant{slotReleasedNow(1, other)}}},
		{name: "a group ended already", state: groupEnded(2), call: settleCall, want: is(false)},
		{name: "an exclusive lease, run out: not a group's", state: lapsed(other), call: settleCall, want: is(false)},
		{name: "no row", state: noRow(), call: settleCall, want: is(false)},
	})
}
