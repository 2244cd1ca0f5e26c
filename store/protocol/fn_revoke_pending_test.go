package protocol_test

import (
	"testing"
	"time"
)

// pendingArgs are the arguments of distributed_lock_revoke_pending but the key.
type pendingArgs struct {
	owner string
	token tok
}

func (a pendingArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_revoke_pending(key => $1, owner => $2, token => $3)`,
		[]any{key, a.owner, tokenArg(p, a.token)}
}

// pending: the call answers the revoke (reason "": none at all) and changes
// nothing.
func pending(reason string, deadline bool) want {
	return want{row: untouched, check: toldOf(reason, deadline)}
}

// toldOf checks that a call's row tells its holder of the revoke pending
// on the lease (reason "": none at all), with its deadline and the time
// left until it, or none.
func toldOf(reason string, deadline bool) check {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		got, _ := result["reason"].(string)
		switch {
		case reason == "" && result["requested_at"] != nil:
			t.Errorf("revoke %v; want none (all NULL)", result)
		case reason != "" && (got != reason || result["actor"] != "alice" || result["caller_role"] == nil):
			t.Errorf("revoke %v; want reason %q by alice, with the role that revoked", result, reason)
		case deadline != (result["force_at"] != nil) || deadline != (result["remaining"] != nil):
			t.Errorf("revoke %v; want a deadline and the time left: %v", result, deadline)
		}
	}
}

func TestRevokePending(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_revoke_pending")
	mine := pendingArgs{owner: me, token: keptToken}
	f.run(t, []fnCase{
		{name: "held, no revoke", state: heldBy(me), call: mine.call, want: pending("", false)},
		{name: "held, revoked", state: heldBy(me).revoked(revokeRow{reason: "drain"}), call: mine.call, want: pending("drain", false)},
		{name: "held, revoked with a deadline", state: heldBy(me).revoked(revokeRow{reason: "drain", forceIn: deadlineIn(time.Minute)}),
			call: mine.call, want: pending("drain", true)},
		{name: "another owner's lease: not told", state: heldBy(other).revoked(revokeRow{reason: "drain"}), call: mine.call,
			want: pending("", false)},
		{name: "taken by another role: not told", state: heldBy(me).ofAnotherRole().revoked(revokeRow{reason: "drain"}),
			call: mine.call, want: pending("", false)},
	})
}
