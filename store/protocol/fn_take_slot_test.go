package protocol_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
)

// takeSlotArgs: who takes a slot, of a group of permits (0: shared).
type takeSlotArgs struct {
	owner   string
	permits int
}

// The owner calls the internal function directly, as acquire_shared does
// with the group's row locked; the slot's lease and the one it ended.
func (a takeSlotArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT t.lock_key, t.owner_id, t.fence_token, t.slot, t.previous_owner, t.previous_token
		FROM distributed_lock_take_slot(key => $1, owner => $2, ttl_us => $3, n => $4, lease_metadata => NULL,
		                                ts => clock_timestamp()) t`,
		[]any{key, a.owner, time.Minute.Microseconds(), nonZero(a.permits)}
}

// tookSlot checks the slot taken (0: NULL) and the lease it held before
// (by owner and the token of the state's n-th holder; "": none, a new slot).
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
			want: took([]slotWant{slotGranted(me, "acquired", time.Minute), asPrepared}, tookSlot(1, other, 1))},
		{name: "another's lapsed slot: a steal, naming its lease", state: semaphoreOf(2, other).holding(lapsedSlot(w1)), call: ofTwo.call,
			want: took([]slotWant{asPrepared, slotGranted(me, "stolen", time.Minute)}, tookSlot(2, w1, 2))},
		{name: "the caller's own lapsed slot: not a steal", state: semaphoreOf(2, other).holding(lapsedSlot(me)), call: ofTwo.call,
			want: took([]slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)}, tookSlot(2, me, 2))},
		{name: "every permit held: none", state: semaphoreOf(2, other, w1), call: ofTwo.call,
			want: want{nullKey: true, row: untouched, check: tookSlot(0, "", 0)}},
		{name: "a released slot beyond the permits: not reused, none", state: semaphoreOf(2, other, w1).holding(releasedSlot(w2)),
			call: ofTwo.call, want: want{nullKey: true, row: untouched, check: tookSlot(0, "", 0)}},
		{name: "a lapsed slot being fenced: passed over", state: sharedBy().holding(lapsedSlot(other), liveSlot(w1)), call: mine.call,
			during: whileSlotLocked(1), want: took(append(slotsKept(2), slotGranted(me, "acquired", time.Minute)), tookSlot(3, "", 0))},
		{name: "the new slot created by a concurrent grant: the next one numbered", state: sharedBy(other), call: mine.call,
			during: whileSlotInsertCommits(2, w1), want: took([]slotWant{asPrepared, slotGranted(w1, "acquired", time.Minute),
				slotGranted(me, "acquired", time.Minute)}, tookSlot(3, "", 0))},
	})
}

// whileSlotLocked makes the call while another transaction holds the slot
// locked (a holder's fence): it is not waited for.
func whileSlotLocked(slot int) during {
	return func(t *testing.T, db *pgxpool.Pool, key string, call func()) {
		t.Helper()
		ctx := context.Background()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `SELECT FROM distributed_lock_holder WHERE lock_key = $1 AND slot = $2 FOR SHARE`,
			key, slot); err != nil {
			t.Fatal(err)
		}
		call()
	}
}

// whileSlotInsertCommits makes the call while another transaction's grant
// of a new slot to owner is inserting it: the call waits for that insert,
// which then commits.
func whileSlotInsertCommits(slot int, owner string) during {
	return func(t *testing.T, db *pgxpool.Pool, key string, call func()) {
		t.Helper()
		ctx := context.Background()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, insertHolderSQL, key, slot, owner, "acquired", time.Minute.Microseconds(),
			time.Minute.Microseconds(), 0, 0); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		pid := int32(tx.Conn().PgConn().PID())
		testdb.Eventually(t, 10*time.Second, "the call waiting for the slot's insert", func() bool {
			var blocked bool
			if err := db.QueryRow(ctx, blockedBySQL, pid).Scan(&blocked); err != nil {
				t.Fatal(err)
			}
			return blocked
		})
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		<-done
	}
}
