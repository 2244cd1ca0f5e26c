package protocol_test

import "testing"

// A grant is a steal when it ends another owner's unreleased lease, or
// another role's.
func TestGrantKind(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_grant_kind")
	mine := ruleCall(`distributed_lock_grant_kind(l, $2, session_user)`, me)
	f.run(t, []fnCase{
		{name: "expired, another's", state: lapsed(other), call: mine, want: is("stolen")},
		{name: "free, another's last", state: free(), call: mine, want: is("acquired")},
		{name: "expired, the caller's own", state: lapsed(me), call: mine, want: is("acquired")},
		{name: "expired, the caller's owner under another role", state: lapsed(me).ofAnotherRole(), call: mine,
			want: is("stolen")},
		{name: "lapsed hand-off to another", state: lapsedHandOffTo(w1), call: mine, want: is("stolen")},
	})
}
