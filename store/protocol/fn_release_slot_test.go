package protocol_test

import "testing"

// The owner calls the internal function directly, as distributed_lock_release
// does for a token that is no exclusive lease.
func releaseSlotCall(token tok) func(string, prepared) (string, []any) {
	return func(key string, p prepared) (string, []any) {
		return `SELECT * FROM distributed_lock_release_slot(key => $1, owner => $2, token => $3,
			lazy_commit => false, log_release => false, event_actor => NULL)`,
			[]any{key, me, tokenArg(p, token)}
	}
}

// A holder's lease is released (the group runs on, or ends with its last
// holder); another's, or none, is not held.
func TestReleaseSlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_release_slot")
	f.run(t, []fnCase{
		{name: "a holder of two: released, the group runs on", state: sharedBy(other, me), call: releaseSlotCall(slotTok(2)),
			want: want{outcome: "released", owner: me, token: slotTok(2), row: untouched,
				slots: []slotWant{asPrepared, slotReleasedNow(2, me)}}},
		{name: "the last holder: the group ends", state: sharedBy(me).holding(lapsedSlot(other)), call: releaseSlotCall(slotTok(1)),
			want: want{outcome: "released", owner: me, token: slotTok(1), row: settled(0),
				slots: []slotWant{slotReleasedNow(1, me), slotReleasedNow(2, other)}}},
		{name: "another holder's slot: not held", state: sharedBy(other, me), call: releaseSlotCall(slotTok(1)),
			want: want{outcome: "not_held", row: untouched}},
		{name: "an exclusive lease: not a slot", state: heldBy(me), call: releaseSlotCall(keptToken),
			want: want{outcome: "not_held", row: untouched}},
	})
}
