package protocol_test

import "testing"

// leaderCall reads the key's leader as "OWNER VALUE", or "none".
func leaderCall(key string, _ prepared) (string, []any) {
	return `SELECT coalesce((SELECT owner_id || ' ' || coalesce(value #>> '{}', '') FROM distributed_lock_leader(key => $1)), 'none') AS result`,
		[]any{key}
}

func TestLeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_leader")
	elected := func(s state) state {
		return s.with(func(r *lockRow) { r.metadata = `{"election": true, "value": "10.0.0.1"}` })
	}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: leaderCall, want: is("none")},
		{name: "an election key held", state: elected(heldBy(other)), call: leaderCall, want: is(other + " 10.0.0.1")},
		{name: "a lock that is no election key", state: heldBy(other), call: leaderCall, want: is("none")},
		{name: "an election key whose leader's lease ran out", state: elected(lapsed(other)), call: leaderCall, want: is("none")},
		{name: "an election key released", state: elected(free()), call: leaderCall, want: is("none")},
	})
}
