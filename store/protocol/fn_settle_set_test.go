package protocol_test

import "testing"

func settleSetCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS result FROM (SELECT distributed_lock_settle_set(ks => ARRAY[$1::text], ts => clock_timestamp())) c`,
		[]any{key}
}

// A set's group whose holders all lapsed ends; one a holder keeps runs on.
func TestSettleSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_settle_set")
	f.run(t, []fnCase{
		{name: "every holder lapsed: ended", state: sharedBy().holding(lapsedSlot(other), releasedSlot(w1)),
			call: settleSetCall, want: want{value: true, row: settled(0), slots: []slotWant{slotReleasedNow(1, other), asPrepared}}},
		{name: "a holder's lease runs: the group runs on", state: sharedBy(other), call: settleSetCall, want: is(true)},
		{name: "an exclusive lease: not a group", state: heldBy(other), call: settleSetCall, want: is(true)},
	})
}
