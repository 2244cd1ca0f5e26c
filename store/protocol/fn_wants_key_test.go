package protocol_test

import "testing"

// A set's mode asks for the key itself when it is exclusive or not named.
func TestWantsKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_wants_key")
	wants := func(mode string) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_wants_key($2::text)`, null(mode))
	}
	f.run(t, []fnCase{
		{name: "not named", state: free(), call: wants(""), want: is(true)},
		{name: "exclusive", state: free(), call: wants("exclusive"), want: is(true)},
		{name: "shared", state: free(), call: wants("shared"), want: is(false)},
		{name: "semaphore", state: free(), call: wants("semaphore"), want: is(false)},
	})
}
