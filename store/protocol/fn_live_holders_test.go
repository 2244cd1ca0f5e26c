package protocol_test

import "testing"

func liveHoldersCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_live_holders(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// Only slots whose lease runs count: not a released one, nor one that ran
// out, nor an exclusive lease.
func TestLiveHolders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_live_holders")
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: liveHoldersCall, want: is(0)},
		{name: "shared by two", state: sharedBy(other, w1), call: liveHoldersCall, want: is(2)},
		{name: "a live, a lapsed and a released slot", state: semaphoreOf(3, other).holding(lapsedSlot(w1), releasedSlot(w2)),
			call: liveHoldersCall, want: is(1)},
		{name: "every holder lapsed", state: sharedBy().holding(lapsedSlot(other)), call: liveHoldersCall, want: is(0)},
		{name: "held exclusively", state: heldBy(other), call: liveHoldersCall, want: is(0)},
	})
}
