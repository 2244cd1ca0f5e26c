package protocol_test

import "testing"

// sessionRuleCall evaluates a session rule on the case's session as a
// protocol function does: expr reads the row as s and the call's now as
// c.ts; args follow the session's id as $2, $3, ….
func sessionRuleCall(expr string, args ...any) func(string, prepared) (string, []any) {
	return func(_ string, p prepared) (string, []any) {
		return `SELECT ` + expr + ` AS result
			FROM distributed_lock_session s, (SELECT clock_timestamp() AS ts) c WHERE s.session_id = $1`,
			append([]any{p.sessions[0]}, args...)
	}
}

func TestSessionLive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_session_live")
	mine := sessionRuleCall(`distributed_lock_session_live(s, $2, c.ts)`, me)
	f.run(t, []fnCase{
		{name: "the caller's, running", state: noRow().inSession(liveSession()), call: mine, want: is(true)},
		{name: "the caller's, lapsed", state: noRow().inSession(lapsedSession()), call: mine, want: is(false)},
		{name: "another owner's, running", state: noRow().inSession(liveSession().of(other)), call: mine, want: is(false)},
		{name: "another owner's, lapsed", state: noRow().inSession(lapsedSession().of(other)), call: mine, want: is(false)},
	})
}
