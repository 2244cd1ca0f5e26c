package protocol_test

import (
	"testing"
	"time"
)

// The owner calls the internal function directly with the key's row locked
// for update, as distributed_lock_acquire_shared does.
func makeGroupCall(permits int) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT m.* FROM (SELECT l FROM distributed_lock l WHERE l.lock_key = $1 AND l.slot = 0 FOR NO KEY UPDATE) r,
			distributed_lock_make_group(r => r.l, joining => false, n => $3, owner => $2, ttl_us => $4,
				event_actor => NULL, ts => clock_timestamp()) m`,
			[]any{key, me, nonZero(permits), time.Minute.Microseconds()}
	}
}

// madeGroup: the call admitted the caller, having formed the group (or
// found it running), and says whether it stole.
func madeGroup(formed, stole bool) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["formed"] != formed || result["stole"] != stole {
			t.Errorf("formed %v, stole %v; want %v, %v", result["formed"], result["stole"], formed, stole)
		}
	}
}

// A free row becomes the group asked for; a running group of that kind
// admits; an exclusive lease, another kind's holders or a queue ahead
// refuse.
func TestMakeGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_make_group")
	f.run(t, []fnCase{
		{name: "free: the group formed", state: free(), call: makeGroupCall(0), want: want{
			row: formed("shared", 0, "acquired", other, keptToken), check: madeGroup(true, false)}},
		{name: "an exclusive lease ran out: formed over it, a steal", state: lapsed(other), call: makeGroupCall(2), want: want{
			row: formed("semaphore", 2, "stolen", other, keptToken), check: madeGroup(true, true)}},
		{name: "a running group of the kind: admitted", state: sharedBy(other), call: makeGroupCall(0), want: want{
			row: untouched, check: madeGroup(false, false)}},
		{name: "held exclusively: refused", state: heldBy(other), call: makeGroupCall(0), want: want{
			outcome: "held", owner: other, token: keptToken, remaining: &span{50*time.Second - slack, 50 * time.Second},
			row: untouched, refusal: queueOf(0)}},
		{name: "another kind's holders: conflict", state: semaphoreOf(2, other), call: makeGroupCall(0), want: want{
			outcome: "conflict", owner: groupOwner, token: keptToken, row: untouched, refusal: queueOf(0)}},
		{name: "a writer queued ahead: queued", state: sharedBy(other).queued(w1), call: makeGroupCall(0), want: want{
			outcome: "queued", owner: groupOwner, token: keptToken, row: untouched, waiters: waiters(w1),
			refusal: queueOf(1)}},
	})
}
