package protocol_test

import "testing"

// A key's row runs a group of the kind asked for while the group has not
// ended: its mode and permits, unreleased, expiring at the group's end.
func TestRunsGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_runs_group")
	runs := func(permits int) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_runs_group(l, $2)`, nonZero(permits))
	}
	f.run(t, []fnCase{
		{name: "a running shared group, asked shared", state: sharedBy(other), call: runs(0), want: is(true)},
		{name: "a running semaphore of 2, asked as one of 2", state: semaphoreOf(2, other), call: runs(2), want: is(true)},
		{name: "a running semaphore of 2, asked as one of 3", state: semaphoreOf(2, other), call: runs(3), want: is(false)},
		{name: "a semaphore of 2 that ended", state: groupEnded(2), call: runs(2), want: is(false)},
		{name: "an exclusive lease, asked shared", state: heldBy(other), call: runs(0), want: is(false)},
		{name: "a free key, asked shared", state: free(), call: runs(0), want: is(false)},
	})
}
