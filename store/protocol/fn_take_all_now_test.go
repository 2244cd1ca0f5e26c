package protocol_test

import (
	"testing"
	"time"
)

func takeAllNowCall(mode string, permits int) func(string, prepared) (string, []any) {
	return func(key string, p prepared) (string, []any) {
		keys := p.all()
		modes, ns := make([]any, len(keys)), make([]any, len(keys))
		modes[0], ns[0] = null(mode), nonZero(permits)
		return `SELECT t.* FROM (SELECT 1 FROM distributed_lock l WHERE l.lock_key = ANY ($1) AND l.slot = 0
			ORDER BY l.lock_key FOR NO KEY UPDATE) r, LATERAL (SELECT coalesce(cardinality(
			distributed_lock_take_all_now(keys => $1, owner => $2, ttl_us => $3, lease_metadata => NULL, event_actor => NULL,
				event_detail => NULL, log_grants => false, lock_delay_us => 0, modes => $4::text[], permits => $5::integer[],
				ts => clock_timestamp())), 0) AS result) t LIMIT 1`,
			[]any{keys, me, time.Minute.Microseconds(), modes, ns}
	}
}

// A waiting set is granted at once when every key admits its mode, and
// holds nothing otherwise.
func TestTakeAllNow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_take_all_now")
	f.run(t, []fnCase{
		{name: "a running shared group and a free key: both granted", state: sharedBy(other).and(also{name: "b", state: free()}),
			call: takeAllNowCall("shared", 0), want: want{value: int32(2), row: untouched,
				slots: []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "a full semaphore: nothing", state: semaphoreOf(1, other).and(also{name: "b", state: free()}),
			call: takeAllNowCall("semaphore", 1), want: want{value: int32(0), row: untouched,
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", other, false) }}},
		{name: "the other key held: nothing", state: sharedBy(other).and(also{name: "b", state: heldBy(w1)}),
			call: takeAllNowCall("shared", 0), want: want{value: int32(0), row: untouched}},
	})
}
