package protocol_test

import (
	"testing"
	"time"
)

// joinGroupCall calls the internal function directly for owner and
// permits (nil: shared), with the key's row locked for share and read as
// distributed_lock_acquire_shared passes it.
func joinGroupCall(owner string, permits any) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT * FROM distributed_lock_join_group(
			r => (SELECT l FROM distributed_lock l WHERE l.lock_key = $1 AND l.slot = 0 FOR SHARE), owner => $2,
			ttl_us => $3, n => $4, lease_metadata => NULL, ts => clock_timestamp())`,
			[]any{key, owner, time.Minute.Microseconds(), permits}
	}
}

// The one-statement grant into a running group: a released slot, or
// nothing (the caller's rare paths decide).
func TestJoinGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_join_group")
	nothing := want{row: untouched, slots: []slotWant{asPrepared, asPrepared}}
	f.run(t, []fnCase{
		{name: "semaphore, a released permit: its slot granted", state: semaphoreOf(2, other).holding(releasedSlot(w1)),
			call: joinGroupCall(me, 2), want: want{owner: me, token: drawnToken, row: untouched,
				slots: []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)}}},
		{name: "semaphore, a lapsed permit: nothing (a steal is the rare path's)", state: semaphoreOf(2, other).holding(lapsedSlot(w1)),
			call: joinGroupCall(me, 2), want: nothing},
		{name: "shared, no released slot: nothing (a new slot is the rare path's)", state: sharedBy(other, w1),
			call: joinGroupCall(me, nil), want: nothing},
		{name: "the caller a holder: nothing (a renewal)", state: sharedBy(me).holding(releasedSlot(w1)),
			call: joinGroupCall(me, nil), want: nothing},
		{name: "a writer queued: nothing", state: sharedBy(other).holding(releasedSlot(w1)).queued(w2),
			call: joinGroupCall(me, nil), want: want{row: untouched, slots: []slotWant{asPrepared, asPrepared}, waiters: waiters(w2)}},
		{name: "another kind asked: nothing", state: semaphoreOf(2, other).holding(releasedSlot(w1)),
			call: joinGroupCall(me, nil), want: nothing},
		{name: "the reserved owner: nothing", state: sharedBy(other).holding(releasedSlot(w1)),
			call: joinGroupCall("*", nil), want: nothing},
	})
}
