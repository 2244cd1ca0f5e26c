package protocol_test

import (
	"testing"
	"time"
)

// writeWaiterCall calls fn, distributed_lock_add_waiter or a function of
// its arguments, for me's record: a two-minute lease, a five-second claim
// window, seen for thirty seconds, on channel chanA, waiting for mode
// (NULL: the key) with permits (0: NULL).
func writeWaiterCall(fn, mode string, permits int) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT ` + fn + `(key => $1, owner => $2, ttl_us => $3, claim_us => $4,
			seen_for_us => $5, lease_metadata => '{"pid": 42}', event_actor => 'svc', log_grants => true,
			lock_delay_us => $6, channel => $7, mode => $8, permits => $9, ts => clock_timestamp()) AS result`,
			[]any{key, me, (2 * time.Minute).Microseconds(), (5 * time.Second).Microseconds(),
				(30 * time.Second).Microseconds(), (20 * time.Second).Microseconds(), chanA, null(mode), nonZero(permits)}
	}
}

// hasAskedLease checks that record got carries the lease writeWaiterCall asks for.
func hasAskedLease(t *testing.T, got waiterState) {
	t.Helper()
	if show(got.TTL) != "2m0s" || show(got.Claim) != "5s" || !sameJSON(got.Metadata, `{"pid": 42}`) ||
		!got.LogGrants || show(got.Actor) != "svc" || got.LockDelay != 20*time.Second {
		t.Errorf("record %+v; want the lease asked for: 2m, claim 5s, {\"pid\": 42}, logged by svc, lock-delay 20s", got)
	}
}

// The record goes to the back of the queue with the lease asked for; the
// key's row is not touched.
func TestAddWaiter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_add_waiter")
	asked := func(t *testing.T, _ map[string]any, _ prepared, after observed) {
		t.Helper()
		hasAskedLease(t, after.waiters[len(after.waiters)-1])
	}
	f.run(t, []fnCase{
		{name: "behind a waiter, for the key", state: heldBy(other).queued(w1), call: writeWaiterCall(f.fn, "", 0),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1}, {owner: me, seenFor: 30 * time.Second, channel: chanA}},
				check: asked}},
		{name: "the first, for a permit of two", state: semaphoreOf(2, other), call: writeWaiterCall(f.fn, "semaphore", 2),
			want: want{row: untouched, waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second, channel: chanA,
				mode: "semaphore", permits: 2}}, check: asked}},
	})
}
