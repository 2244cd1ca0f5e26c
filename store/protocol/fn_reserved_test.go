package protocol_test

import "testing"

func TestReserved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_reserved")
	reserved := func(owner string) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_reserved($2)`, owner)
	}
	f.run(t, []fnCase{
		{name: "the group's owner", state: free(), call: reserved("*"), want: is(true)},
		{name: "an owner", state: free(), call: reserved(me), want: is(false)},
		{name: "a star among others", state: free(), call: reserved("**"), want: is(false)},
	})
}
