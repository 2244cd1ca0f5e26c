package protocol_test

import (
	"testing"
	"time"
)

// takeSlotArgs: who takes a slot, of a group of permits (0: shared).
type takeSlotArgs struct {
	owner   string
	permits int
}

// The owner calls the internal function directly, as acquire_shared does
// with the group's row locked; the slot's lease and, for a steal, the one
// it ended (the slot records the lease before it either way).
func (a takeSlotArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT t.lock_key, t.owner_id, t.fence_token, t.slot,
		       CASE WHEN t.grant_kind = 'stolen' THEN t.previous_owner END AS previous_owner,
		       CASE WHEN t.grant_kind = 'stolen' THEN t.previous_token END AS previous_token
		FROM distributed_lock_take_slot(key => $1, owner => $2, role => session_user, ttl_us => $3, n => $4,
		                                lease_metadata => NULL,
		                                ts => clock_timestamp()) t`,
		[]any{key, a.owner, time.Minute.Microseconds(), nonZero(a.permits)}
}

// tookSlot checks the slot taken (0: NULL) and the lease it ended (by owner
// and the token of the state's n-th holder; "": none).
func tookSlot(slot int, previous string, n int) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		var wantSlot, wantOwner, wantToken any
		if slot != 0 {
			wantSlot = slot
		}
		if previous != "" {
			wantOwner, wantToken = previous, p.slots[n-1]
		}
		if !sameJSON(result["slot"], wantSlot) || !sameJSON(result["previous_owner"], wantOwner) ||
			!sameJSON(result["previous_token"], wantToken) {
			t.Errorf("slot %v, previous %v/%v; want %v, %v/%v", result["slot"], result["previous_owner"],
				result["previous_token"], wantSlot, wantOwner, wantToken)
		}
	}
}

func TestTakeSlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_take_slot")
	mine := takeSlotArgs{owner: me}
	ofTwo := takeSlotArgs{owner: me, permits: 2}
	took := func(slots []slotWant, check func(*testing.T, map[string]any, prepared, observed)) want {
		return want{owner: me, token: drawnToken, row: untouched, slots: slots, check: check}
	}
	f.run(t, []fnCase{
		{name: "shared: a new slot after the others", state: sharedBy(other, w1), call: mine.call,
			want: took(append(slotsKept(2), slotGranted(me, "acquired", time.Minute)), tookSlot(3, "", 0))},
		{name: "a released slot: the lowest reused", state: semaphoreOf(2).holding(releasedSlot(other), releasedSlot(w1)), call: ofTwo.call,
			want: took([]slotWant{slotGranted(me, "acquired", time.Minute), asPrepared}, tookSlot(1, "", 0))},
		{name: "another's lapsed slot: a steal, naming its lease", state: semaphoreOf(2, other).holding(lapsedSlot(w1)), call: ofTwo.call,
			want: took([]slotWant{asPrepared, slotGranted(me, "stolen", time.Minute)}, tookSlot(2, w1, 2))},
		{name: "the caller's own lapsed slot: not a steal", state: semaphoreOf(2, other).holding(lapsedSlot(me)), call: ofTwo.call,
			want: took([]slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)}, tookSlot(2, "", 0))},
		{name: "every permit held: none", state: semaphoreOf(2, other, w1), call: ofTwo.call,
			want: want{nullKey: true, row: untouched, check: tookSlot(0, "", 0)}},
		{name: "a released slot beyond the permits: not reused, none", state: semaphoreOf(2, other, w1).holding(releasedSlot(w2)),
			call: ofTwo.call, want: want{nullKey: true, row: untouched, check: tookSlot(0, "", 0)}},
		{name: "a lapsed slot being fenced: passed over", state: sharedBy().holding(lapsedSlot(other), liveSlot(w1)), call: mine.call,
			during: whileSlotLocked(1), want: took(append(slotsKept(2), slotGranted(me, "acquired", time.Minute)), tookSlot(3, "", 0))},
		{name: "the new slot created by a concurrent grant: the next one", state: sharedBy(other), call: mine.call,
			during: whileSlotInsertCommits(2, w1),
			want: took([]slotWant{asPrepared, slotGranted(w1, "acquired", time.Minute),
				slotGranted(me, "acquired", time.Minute)}, tookSlot(3, "", 0))},
		{name: "the last permit taken by a concurrent grant: none", state: semaphoreOf(2, other), call: ofTwo.call,
			during: whileSlotInsertCommits(2, w1),
			want: want{nullKey: true, row: untouched, check: tookSlot(0, "", 0),
				slots: []slotWant{asPrepared, slotGranted(w1, "acquired", time.Minute)}}},
	})
}

// whileSlotLocked makes the call while another transaction holds the slot
// locked (a holder's fence): it is not waited for.
func whileSlotLocked(slot int) during {
	return whileLocked(`SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = $2 FOR SHARE`, false, slot)
}

// whileSlotInsertCommits makes the call while another transaction's grant
// of a new slot to owner is inserting it: the call waits for that insert,
// which then commits.
func whileSlotInsertCommits(slot int, owner string) during {
	return whileLocked(insertHolderSQL, true, slot, owner, "acquired", time.Minute.Microseconds(),
		time.Minute.Microseconds(), 0, 0, "")
}
