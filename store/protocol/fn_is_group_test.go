package protocol_test

import "testing"

func TestIsGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_is_group")
	group := ruleCall(`distributed_lock_is_group(l)`)
	f.run(t, []fnCase{
		{name: "held alone", state: heldBy(other), call: group, want: is(false)},
		{name: "free", state: free(), call: group, want: is(false)},
		{name: "a running shared group", state: sharedBy(other), call: group, want: is(true)},
		{name: "a running semaphore", state: semaphoreOf(2, other), call: group, want: is(true)},
		{name: "a semaphore's group that ended", state: groupEnded(3), call: group, want: is(true)},
		{name: "a holder's slot", state: sharedBy(other), call: slotRuleCall(1, `distributed_lock_is_group(l)`), want: is(true)},
	})
}
