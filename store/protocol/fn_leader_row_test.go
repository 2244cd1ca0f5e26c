package protocol_test

import "testing"

func TestLeaderRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_leader_row")
	f.run(t, []fnCase{
		{name: "the key's own row", state: heldBy(other), call: ruleCall(`distributed_lock_leader_row(l, $1)`), want: is(true)},
		{name: "another key", state: heldBy(other), call: ruleCall(`distributed_lock_leader_row(l, 'another key')`), want: is(false)},
	})
}
