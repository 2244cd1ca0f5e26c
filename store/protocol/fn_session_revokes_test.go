package protocol_test

import (
	"testing"
	"time"
)

// sessionRevokesCall reads the revokes of the case's own session, as
// owner, as one row: how many, and their reasons.
func sessionRevokesCall(owner string) func(string, prepared) (string, []any) {
	return func(_ string, p prepared) (string, []any) {
		return `SELECT count(*) AS n, coalesce(string_agg(coalesce(r.reason, '-') || '@' || (r.remaining_us IS NOT NULL)::text, ','), '') AS reasons
			FROM distributed_lock_session_revokes(session => $1, owner => $2) r`, []any{p.sessions[0], owner}
	}
}

// revokesAre: the call answers these reasons (each "reason@deadline?"),
// and changes nothing.
func revokesAre(reasons string) want {
	w := want{row: untouched}
	w.check = func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["reasons"] != reasons {
			t.Errorf("revokes %v; want %q", result, reasons)
		}
	}
	return w
}

func TestSessionRevokes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_session_revokes")
	mine := sessionRevokesCall(me)
	f.run(t, []fnCase{
		{name: "bound, not revoked", state: heldBy(me).inSession(liveSession(theGrant)), call: mine, want: revokesAre("")},
		{name: "bound and revoked", state: heldBy(me).inSession(liveSession(theGrant)).revoked(revokeRow{reason: "drain"}),
			call: mine, want: revokesAre("drain@false")},
		{name: "bound and revoked with a deadline", call: mine, want: revokesAre("drain@true"),
			state: heldBy(me).inSession(liveSession(theGrant)).revoked(revokeRow{reason: "drain", forceIn: deadlineIn(time.Minute)})},
		{name: "revoked, not bound", state: heldBy(me).inSession(liveSession()).revoked(revokeRow{reason: "drain"}),
			call: mine, want: revokesAre("")},
		{name: "another owner's session: none", state: heldBy(me).inSession(liveSession(theGrant)).revoked(revokeRow{reason: "drain"}),
			call: sessionRevokesCall(other), want: revokesAre("")},
	})
}
