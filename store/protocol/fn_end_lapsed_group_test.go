package protocol_test

import "testing"

func endLapsedGroupCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_end_lapsed_group(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// slotEndedWithGroup is the n-th prepared holder's lapsed lease of owner's,
// released as its group ended (its expiry kept).
var slotEndedWithGroup = slotReleasedNow

// An exclusive acquire ends a group whose holders all lapsed, unless one
// still holds, or another transaction has the group's row.
func TestEndLapsedGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_end_lapsed_group")
	f.run(t, []fnCase{
		{name: "every holder lapsed: ended", state: sharedBy().holding(lapsedSlot(other), lapsedSlot(w1)), call: endLapsedGroupCall,
			want: want{value: true, row: settled(0), slots: []slotWant{slotEndedWithGroup(1, other), slotEndedWithGroup(2, w1)}}},
		{name: "a semaphore's holders lapsed, a writer queued: ended, handed to it",
			state: semaphoreOf(2).holding(lapsedSlot(other)).queued(w1), call: endLapsedGroupCall,
			want: want{value: true, row: handedFromGroup(w1, 2), slots: []slotWant{slotEndedWithGroup(1, other)},
				notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "one holder live: refused", state: sharedBy(w1).holding(lapsedSlot(other)), call: endLapsedGroupCall, want: is(false)},
		{name: "every holder lapsed, the row another transaction's: refused", state: sharedBy().holding(lapsedSlot(other)),
			call: endLapsedGroupCall, during: whileRowLocked, want: is(false)},
		{name: "an ended group", state: groupEnded(0), call: endLapsedGroupCall, want: is(false)},
		{name: "an exclusive lease, run out", state: lapsed(other), call: endLapsedGroupCall, want: is(false)},
	})
}
