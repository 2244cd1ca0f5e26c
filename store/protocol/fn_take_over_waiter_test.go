package protocol_test

import (
	"testing"
	"time"
)

// takeOverCall gives me's live record, if any, the lease addWaiterCall
// asks for: a two-minute lease, a five-second claim window, seen for
// thirty seconds, on channel chanA, waiting for mode (NULL: the key) with
// permits (0: NULL).
func takeOverCall(mode string, permits int) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT distributed_lock_take_over_waiter(key => $1, owner => $2, ttl_us => $3, claim_us => $4,
			seen_for_us => $5, lease_metadata => '{"pid": 42}', event_actor => 'svc', log_grants => true,
			lock_delay_us => $6, channel => $7, mode => $8, permits => $9, ts => clock_timestamp()) AS result`,
			[]any{key, me, (2 * time.Minute).Microseconds(), (5 * time.Second).Microseconds(),
				(30 * time.Second).Microseconds(), (20 * time.Second).Microseconds(), chanA, null(mode), nonZero(permits)}
	}
}

// An owner's live record keeps its place and id and carries the lease now
// asked for, the kind it waits for included; an owner without one gets
// NULL and the queue is left alone.
func TestTakeOverWaiter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_take_over_waiter")
	takenOver := func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		got := after.waiters[1]
		if id, ok := result["result"].(int64); !ok || id != got.ID {
			t.Errorf("result %v; want the id of me's record, %d", result["result"], got.ID)
		}
		if show(got.TTL) != "2m0s" || show(got.Claim) != "5s" || !sameJSON(got.Metadata, `{"pid": 42}`) ||
			!got.LogGrants || show(got.Actor) != "svc" || got.LockDelay != 20*time.Second {
			t.Errorf("record %+v; want the lease asked for: 2m, claim 5s, {\"pid\": 42}, logged by svc, lock-delay 20s", got)
		}
	}
	none := func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["result"] != nil {
			t.Errorf("result %v; want NULL", result["result"])
		}
	}
	mine := waiterRow{owner: me, seenFor: 10 * time.Second, waitedFor: time.Second}
	f.run(t, []fnCase{
		{name: "its record, behind a waiter", state: heldBy(other).queued(w1).withWaiter(mine).queued(w2),
			call: takeOverCall("", 0), want: want{row: untouched, waiters: []waiterWant{{owner: w1},
				{owner: me, seenFor: 30 * time.Second, channel: chanA}, {owner: w2}}, check: takenOver}},
		{name: "its record for the key, now for a permit of two", state: heldBy(other).queued(w1).withWaiter(mine),
			call: takeOverCall("semaphore", 2), want: want{row: untouched, waiters: []waiterWant{{owner: w1},
				{owner: me, seenFor: 30 * time.Second, channel: chanA, mode: "semaphore", permits: 2}}, check: takenOver}},
		{name: "no record", state: heldBy(other).queued(w1), call: takeOverCall("", 0),
			want: want{row: untouched, waiters: waiters(w1), check: none}},
		{name: "its record lapsed", state: heldBy(other).queued(w1).withWaiter(waiterRow{owner: me, seenFor: -time.Second}),
			call: takeOverCall("", 0), want: want{row: untouched, waiters: []waiterWant{{owner: w1}, {owner: me}}, check: none}},
	})
}
