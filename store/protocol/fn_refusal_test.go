package protocol_test

import "testing"

// Why an attempt that did not take the key was refused.
func TestRefusal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_refusal")
	refusal := ruleCall(`distributed_lock_refusal(l, c.ts)`)
	f.run(t, []fnCase{
		{name: "held", state: heldBy(other), call: refusal, want: is("held")},
		{name: "held, queued", state: heldBy(other).queued(w1), call: refusal, want: isQueued("held", w1)},
		{name: "free (its row locked by another transaction)", state: free(), call: refusal, want: is("free")},
		{name: "expired (its row locked by another transaction)", state: lapsed(other), call: refusal, want: is("expired")},
		{name: "free, queued", state: free().queued(w1), call: refusal, want: isQueued("queued", w1)},
		{name: "expired, queued", state: lapsed(other).queued(w1), call: refusal, want: isQueued("queued", w1)},
		{name: "promised to a waiter", state: promisedTo(w1), call: refusal, want: is("held")},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: refusal, want: is("delayed")},
		{name: "expired, in its lock-delay, queued: the delay first", state: delayedAfterExpiry(other).queued(w1), call: refusal,
			want: isQueued("delayed", w1)},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: refusal, want: is("delayed")},
		{name: "held with a lock-delay", state: heldWithDelay(other), call: refusal, want: is("held")},
	})
}
