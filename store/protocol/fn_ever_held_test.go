package protocol_test

import "testing"

// A row has carried a lease unless it was made for a group that never
// formed: a grant over it names no previous lease.
func TestEverHeld(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_ever_held")
	rule := ruleCall(`distributed_lock_ever_held(l)`)
	f.run(t, []fnCase{
		{name: "held", state: heldBy(other), call: rule, want: is(true)},
		{name: "free, another's last", state: free(), call: rule, want: is(true)},
		{name: "a group's, ended", state: groupEnded(2), call: rule, want: is(true)},
		{name: "made for a group, never held", state: madeForGroup(), call: rule, want: is(false)},
	})
}
