package protocol_test

import "testing"

// A key may be granted anew when nobody holds it, its lock-delay is over,
// and it is not promised to the waiters queued for it; who asks does not
// matter.
func TestMayGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_may_grant")
	grant := ruleCall(`distributed_lock_may_grant(l, c.ts)`)
	f.run(t, []fnCase{
		{name: "free", state: free(), call: grant, want: is(true)},
		{name: "expired", state: lapsed(other), call: grant, want: is(true)},
		{name: "held", state: heldBy(other), call: grant, want: is(false)},
		{name: "free, queued", state: free().queued(w1), call: grant, want: isQueued(false, w1)},
		{name: "expired, queued", state: lapsed(other).queued(w1), call: grant, want: isQueued(false, w1)},
		{name: "held, queued", state: heldBy(other).queued(w1), call: grant, want: isQueued(false, w1)},
		{name: "promised to a waiter", state: promisedTo(w1), call: grant, want: is(false)},
		{name: "lapsed hand-off, nobody queued", state: lapsedHandOffTo(w1), call: grant, want: is(true)},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: grant, want: is(false)},
		{name: "expired, its lock-delay over", state: delayOver(other), call: grant, want: is(true)},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: grant, want: is(false)},
		{name: "lapsed hand-off, queued", state: lapsedHandOffTo(w1).queued(w2), call: grant, want: isQueued(false, w2)},
	})
}
