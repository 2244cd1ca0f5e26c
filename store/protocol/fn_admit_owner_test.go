package protocol_test

import "testing"

func TestAdmitOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_admit_owner")
	admit := func(owner string) func(string, prepared) (string, []any) {
		return func(string, prepared) (string, []any) {
			return `SELECT distributed_lock_admit_owner(owner => $1)::text AS result`, []any{owner}
		}
	}
	f.run(t, []fnCase{
		{name: "an owner", state: free(), call: admit(me), want: want{value: "", row: untouched}},
		{name: "the group's owner", state: free(), call: admit("*"), want: want{err: "23514"}},
	})
}
