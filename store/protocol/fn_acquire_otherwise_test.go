package protocol_test

import (
	"testing"
	"time"
)

// The owner calls the internal function directly, as distributed_lock_acquire
// does once its grant anew granted nothing.
func acquireOtherwiseCall(owner string) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT * FROM distributed_lock_acquire_otherwise(key => $1, owner => $2, ttl_us => $3,
			lease_metadata => NULL, event_actor => NULL, event_detail => NULL, log_grants => false,
			lock_delay_us => 0, ts => clock_timestamp())`,
			[]any{key, owner, time.Minute.Microseconds()}
	}
}

// Acquire's rare paths: a refusal, a first grant, a renewal, a group.
func TestAcquireOtherwise(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_acquire_otherwise")
	f.run(t, []fnCase{
		{name: "held by another: refused", state: heldBy(other), call: acquireOtherwiseCall(me), want: want{
			outcome: "held", owner: other, token: keptToken, remaining: &span{50*time.Second - slack, 50 * time.Second},
			row: untouched, refusal: queueOf(0)}},
		{name: "no row: its first grant", state: noRow(), call: acquireOtherwiseCall(me), want: want{
			outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
			row: grantTo(me, "acquired", time.Minute, noToken)}},
		{name: "held by the caller: renewed", state: heldBy(me), call: acquireOtherwiseCall(me), want: want{
			outcome: "renewed", owner: me, token: keptToken, remaining: &span{},
			row: rowWant{owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute,
				kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}}},
		{name: "a running shared group: held", state: sharedBy(other), call: acquireOtherwiseCall(me), want: want{
			outcome: "held", owner: groupOwner, token: keptToken, remaining: &span{50*time.Second - slack, 50 * time.Second},
			row: untouched, refusal: queueOf(0)}},
		{name: "a reserved owner", state: free(), call: acquireOtherwiseCall("*"), want: want{err: "23514"}},
	})
}
