package protocol_test

import "testing"

func TestOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_open")
	open := ruleCall(`distributed_lock_open(l, c.ts)`)
	f.run(t, []fnCase{
		{name: "free", state: free(), call: open, want: is(true)},
		{name: "expired", state: lapsed(other), call: open, want: is(true)},
		{name: "held", state: heldBy(other), call: open, want: is(false)},
		{name: "promised to a waiter", state: promisedTo(w1), call: open, want: is(false)},
		{name: "lapsed hand-off", state: lapsedHandOffTo(w1), call: open, want: is(true)},
	})
}
