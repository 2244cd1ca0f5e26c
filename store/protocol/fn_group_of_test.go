package protocol_test

import "testing"

// A key's row against the kind a waiter record of mode and permits asks
// for.
func TestGroupOf(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_group_of")
	of := func(mode string, permits int) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_group_of(l, $2, $3)`, null(mode), nonZero(permits))
	}
	f.run(t, []fnCase{
		{name: "shared, for a reader", state: sharedBy(other), call: of("shared", 0), want: is(true)},
		{name: "shared, for a writer", state: sharedBy(other), call: of("", 0), want: is(false)},
		{name: "a semaphore of 2, for one of 2", state: semaphoreOf(2, other), call: of("semaphore", 2), want: is(true)},
		{name: "a semaphore of 2, for one of 3", state: semaphoreOf(2, other), call: of("semaphore", 3), want: is(false)},
		{name: "held alone, for a writer", state: heldBy(other), call: of("", 0), want: is(false)},
		{name: "held alone, for a reader", state: heldBy(other), call: of("shared", 0), want: is(false)},
	})
}
