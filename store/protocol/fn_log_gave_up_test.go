package protocol_test

import (
	"testing"
	"time"
)

// logGaveUpCall logs the wait of the caller's record, as a leave that
// took it out of the queue passes it (the record itself stays here: only
// the event is the function's).
func logGaveUpCall(key string, p prepared) (string, []any) {
	return `SELECT true AS returned FROM distributed_lock_log_gave_up(
			w => (SELECT w FROM distributed_lock_waiter w WHERE w.waiter_id = $1), ts => clock_timestamp())`,
		[]any{p.waiter(me)}
}

// A wait given up is logged as its grant would have been: with the wait's
// length, only when the record logs grants.
func TestLogGaveUp(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_log_gave_up")
	waited := msWithin{3 * time.Second, 3*time.Second + slack}
	f.run(t, []fnCase{
		{name: "a record that logs grants: its wait logged, by its actor",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, waitedFor: 3 * time.Second,
				logGrants: true, actor: "svc"}),
			call: logGaveUpCall, want: want{row: untouched, waiters: waiters(me), events: []eventWant{
				{kind: "gave_up", owner: me, actor: "svc", detail: map[string]any{"waited_ms": waited, "waiter_id": waiterRef(me)}}}}},
		{name: "without an actor: the owner",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, waitedFor: 3 * time.Second, logGrants: true}),
			call:  logGaveUpCall, want: want{row: untouched, waiters: waiters(me), events: []eventWant{
				{kind: "gave_up", owner: me, actor: me, detail: map[string]any{"waited_ms": waited, "waiter_id": waiterRef(me)}}}}},
		{name: "a record that does not log grants: nothing",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, waitedFor: 3 * time.Second}),
			call:  logGaveUpCall, want: want{row: untouched, waiters: waiters(me)}},
	})
}
