package protocol_test

import "testing"

// The grant rule: the caller's running lease, or a key nobody holds that is
// not promised to waiters.
func TestMayTake(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_may_take")
	mine := ruleCall(`distributed_lock_may_take(l, $2, session_user, c.ts)`, me)
	f.run(t, []fnCase{
		{name: "held by the caller", state: heldBy(me), call: mine, want: is(true)},
		{name: "held by another", state: heldBy(other), call: mine, want: is(false)},
		{name: "held by the caller's owner, taken by another role", state: heldBy(me).ofAnotherRole(), call: mine,
			want: is(false)},
		{name: "free", state: free(), call: mine, want: is(true)},
		{name: "expired, another's", state: lapsed(other), call: mine, want: is(true)},
		{name: "expired, the caller's own", state: lapsed(me), call: mine, want: is(true)},
		{name: "free, queued", state: free().queued(w1), call: mine, want: isQueued(false, w1)},
		{name: "expired, queued", state: lapsed(other).queued(w1), call: mine, want: isQueued(false, w1)},
		{name: "expired, the caller's own, queued", state: lapsed(me).queued(w1), call: mine, want: isQueued(false, w1)},
		{name: "held by the caller, queued", state: heldBy(me).queued(w1), call: mine, want: isQueued(true, w1)},
		{name: "promised to a waiter", state: promisedTo(w1), call: mine, want: is(false)},
		{name: "promised to the caller", state: promisedTo(me), call: mine, want: is(true)},
		{name: "lapsed hand-off, nobody queued", state: lapsedHandOffTo(w1), call: mine, want: is(true)},
		{name: "lapsed hand-off, queued", state: lapsedHandOffTo(w1).queued(w2), call: mine, want: isQueued(false, w2)},
	})
}
