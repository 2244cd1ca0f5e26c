package protocol_test

import "testing"

func TestWaitsForGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_waits_for_group")
	waits := func(mode string) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_waits_for_group($2)`, null(mode))
	}
	f.run(t, []fnCase{
		{name: "a shared lease", state: free(), call: waits("shared"), want: is(true)},
		{name: "a permit", state: free(), call: waits("semaphore"), want: is(true)},
		{name: "the key itself", state: free(), call: waits(""), want: is(false)},
	})
}
