package protocol_test

import (
	"testing"
	"time"
)

// grantLeaseArgs are distributed_lock_grant_lease's arguments but the key
// and the slot (0, the key's row): a lease of a minute for me, as the
// caller's role.
type grantLeaseArgs struct {
	anew  bool
	mode  string
	owner string
}

func (a grantLeaseArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_grant_lease(key => $1, s => 0, anew => $2, mode => $3, owner => $4,
		role => session_user, lease_ttl => $5 * interval '1 microsecond',
		expiry => clock_timestamp() + $5 * interval '1 microsecond', lease_metadata => NULL, delay => interval '0',
		handed => NULL, ts => clock_timestamp())`,
		[]any{key, a.anew, a.mode, a.owner, time.Minute.Microseconds()}
}

// The one grant write: a grant anew writes only a row that may be granted
// anew, to an owner that is no reserved word; a hand-off's or a group's
// write takes the row its caller judged. The lease's kind and previous
// lease come from the row; a row made for a group and never held names
// none.
func TestGrantLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_grant_lease")
	anew := grantLeaseArgs{anew: true, mode: "exclusive", owner: me}
	judged := grantLeaseArgs{mode: "exclusive", owner: me}
	from := func(kind, owner string) rowWant {
		w := grantTo(me, kind, time.Minute, keptToken)
		w.prevOwner = owner
		return w
	}
	none := want{nullKey: true, row: untouched}
	fromGroup := grantTo(me, "acquired", time.Minute, noToken)
	f.run(t, []fnCase{
		{name: "anew, free: granted", state: free(), call: anew.call, want: want{
			owner: me, token: drawnToken, row: from("acquired", other)}},
		{name: "anew, expired, another's: stolen", state: lapsed(other), call: anew.call, want: want{
			owner: me, token: drawnToken, row: from("stolen", other)}},
		{name: "anew, held by another: nothing", state: heldBy(other), call: anew.call, want: none},
		{name: "anew, promised to waiters: nothing", state: free().queued(w1), call: anew.call,
			want: want{nullKey: true, row: untouched, waiters: waiters(w1)}},
		{name: "anew, in its lock-delay: nothing", state: delayedAfterExpiry(other), call: anew.call, want: none},
		{name: "anew, to the reserved owner: nothing", state: free(),
			call: grantLeaseArgs{anew: true, mode: "exclusive", owner: groupOwner}.call, want: none},
		{name: "judged, promised to waiters: granted", state: free().queued(w1), call: judged.call, want: want{
			owner: me, token: drawnToken, row: from("acquired", other), waiters: waiters(w1)}},
		{name: "judged, a row made for a group and never held: no previous lease", state: madeForGroup(),
			call: judged.call, want: want{owner: me, token: drawnToken, row: fromGroup}},
		{name: "no row: nothing", state: noRow(), call: anew.call, want: want{nullKey: true, row: untouched}},
	})
}

// madeForGroup is a key's row made for a shared group that never formed:
// owner the reserved '*', released as it was made.
func madeForGroup() state {
	return state{row: &lockRow{owner: groupOwner, expiresIn: 30 * time.Second, freedAgo: 30 * time.Second, mode: "shared"}}
}
