package protocol_test

import "testing"

// The caller has ended leases of the key's holders at ts and logged them.
func holdersEndedCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS returned FROM distributed_lock_holders_ended(key => $1, ts => clock_timestamp())`, []any{key}
}

func TestHoldersEnded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_holders_ended")
	f.run(t, []fnCase{
		{name: "no live holder, a writer queued: the group ended and handed to it",
			state: sharedBy().holding(releasedSlot(other), lapsedSlot(w2)).queued(w1), call: holdersEndedCall,
			want: want{row: handedFromGroup(w1, 0), slots: []slotWant{asPrepared, slotEndedWithGroup(2, w2)},
				notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "no live holder, nobody queued: the group ended", state: semaphoreOf(2).holding(releasedSlot(other)),
			call: holdersEndedCall, want: want{row: settled(2)}},
		{name: "a permit freed, a waiter for one queued: the permit handed to it",
			state: semaphoreOf(2, other).holding(releasedSlot(w2)).withWaiter(permitWaiter(w1, 2)), call: holdersEndedCall,
			want: want{row: untouched, slots: []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore")}}},
		{name: "a holder live, nobody waits: nothing", state: sharedBy(other).holding(releasedSlot(w1)), call: holdersEndedCall,
			want: want{row: untouched}},
		{name: "a holder live, a writer queued: it waits on", state: sharedBy(other).queued(w1), call: holdersEndedCall,
			want: want{row: untouched, waiters: waiters(w1)}},
	})
}
