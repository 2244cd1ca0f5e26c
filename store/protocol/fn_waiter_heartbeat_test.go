package protocol_test

import (
	"testing"
	"time"
)

// heartbeatArgs: the waiters (by owner) whose records the call keeps live.
type heartbeatArgs struct{ waiters []string }

func (a heartbeatArgs) call(_ string, p prepared) (string, []any) {
	ids := []int64{}
	for _, w := range a.waiters {
		ids = append(ids, p.waiter(w))
	}
	return `SELECT coalesce(array_agg(id ORDER BY id), '{}') AS result
		FROM distributed_lock_waiter_heartbeat(ids => $1, seen_for_us => $2) id`,
		[]any{ids, (45 * time.Second).Microseconds()}
}

// missing: the call returns the ids of these waiters (by owner), the ones
// it did not find or that must check.
func missing(owners ...string) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		want := []int64{}
		for _, o := range owners {
			want = append(want, p.waiter(o))
		}
		if !sameJSON(result["result"], want) {
			t.Errorf("ids not found %v; want %v (%v)", result["result"], want, owners)
		}
	}
}

func TestWaiterHeartbeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_waiter_heartbeat")
	refreshed := func(ws ...string) []waiterWant {
		var out []waiterWant
		for _, w := range ws {
			out = append(out, waiterWant{owner: w, seenFor: 45 * time.Second})
		}
		return out
	}
	f.run(t, []fnCase{
		{name: "queued", state: heldBy(other).queued(me, w1), call: heartbeatArgs{[]string{me, w1}}.call, want: want{
			row: untouched, waiters: refreshed(me, w1), check: missing()}},
		{name: "queued, one of two", state: heldBy(other).queued(me, w1), call: heartbeatArgs{[]string{w1}}.call, want: want{
			row: untouched, waiters: []waiterWant{{owner: me}, {owner: w1, seenFor: 45 * time.Second}}, check: missing()}},
		{name: "queued, the wake-up running out", state: heldBy(other).with(func(r *lockRow) { r.wakeFor = 5 * time.Second }).queued(me),
			call: heartbeatArgs{[]string{me}}.call, want: want{
				row: rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
					prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{90*time.Second - slack, 90 * time.Second}},
				waiters: refreshed(me), check: missing()}},
		{name: "one handed a lease meanwhile", state: promisedTo(w1).queued(me), call: heartbeatArgs{[]string{me, w1}}.call, want: want{
			row: untouched, waiters: refreshed(me), check: missing(w1)}},
		{name: "none", state: heldBy(other), call: heartbeatArgs{}.call, want: want{row: untouched, check: missing()}},
		{name: "at the head of a running group's queue", state: sharedBy(other).queued(me, w1), call: heartbeatArgs{[]string{me, w1}}.call,
			want: want{row: untouched, waiters: refreshed(me, w1), check: missing()}},
		{name: "at the head of a group whose holders all lapsed: to check (its check ends the group)",
			state: sharedBy().holding(lapsedSlot(other)).queued(me, w1), call: heartbeatArgs{[]string{me, w1}}.call,
			want: want{row: untouched, waiters: refreshed(me, w1), check: missing(me)}},
		{name: "at the head of a free key: to check", state: free().queued(me, w1), call: heartbeatArgs{[]string{me, w1}}.call, want: want{
			row: untouched, waiters: refreshed(me, w1), check: missing(me)}},
		{name: "at the head of a lapsed key: to check", state: lapsed(other).queued(me), call: heartbeatArgs{[]string{me}}.call, want: want{
			row: untouched, waiters: refreshed(me), check: missing(me)}},
		{name: "at the head of a free key, a lapsed record ahead: to check",
			state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}).queued(me), call: heartbeatArgs{[]string{me}}.call,
			want: want{row: untouched, waiters: []waiterWant{{owner: w1}, {owner: me, seenFor: 45 * time.Second}}, check: missing(me)}},
		{name: "at the head of a key in its lock-delay: nothing to check", state: delayedAfterExpiry(other).queued(me),
			call: heartbeatArgs{[]string{me}}.call, want: want{row: untouched, waiters: refreshed(me), check: missing()}},
		{name: "a set's record at the head of a free key: nothing to check (it waits for its other keys)",
			state: free().queuedSet(me).and(also{name: "b", state: heldBy(other).queuedSet(me)}),
			call:  heartbeatArgs{[]string{me}}.call, want: want{row: untouched, waiters: refreshed(me), check: missing()}},
	})
}
