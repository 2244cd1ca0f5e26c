package protocol_test

import "testing"

// The one liveness rule, on every kind of lease row: a key held alone, a
// group's own lease, a holder's slot.
func TestLive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_live")
	live := ruleCall(`distributed_lock_live(l, c.ts)`)
	slot := func(n int) func(string, prepared) (string, []any) {
		return slotRuleCall(n, `distributed_lock_live(l, c.ts)`)
	}
	f.run(t, []fnCase{
		{name: "held", state: heldBy(other), call: live, want: is(true)},
		{name: "expired", state: lapsed(other), call: live, want: is(false)},
		{name: "free", state: free(), call: live, want: is(false)},
		{name: "released late, after its expiry", state: releasedLate(other), call: live, want: is(false)},
		{name: "promised to a waiter", state: promisedTo(w1), call: live, want: is(true)},
		{name: "a running group's own lease", state: sharedBy(other), call: live, want: is(true)},
		{name: "a group that ended", state: groupEnded(0), call: live, want: is(false)},
		{name: "a holder's live slot", state: sharedBy(other), call: slot(1), want: is(true)},
		{name: "a holder's lapsed slot", state: sharedBy(other).holding(lapsedSlot(w1)), call: slot(2), want: is(false)},
		{name: "a holder's released slot", state: sharedBy(other).holding(releasedSlot(w1)), call: slot(2), want: is(false)},
	})
}
