package protocol_test

import (
	"testing"
	"time"
)

// proclaimArgs are distributed_lock_proclaim's arguments but the key.
type proclaimArgs struct {
	owner string
	token tok
	value string
}

func (a proclaimArgs) call(key string, p prepared) (string, []any) {
	return `SELECT distributed_lock_proclaim(key => $1, owner => $2, token => $3, value => to_jsonb($4::text)) AS result`,
		[]any{key, a.owner, tokenArg(p, a.token), a.value}
}

// Only the running lease's own role and token proclaim, and tell observers
// with a wake-up; anything else answers false, and writes and sends nothing.
func TestProclaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_proclaim")
	mine := proclaimArgs{owner: me, token: keptToken, value: "10.0.0.2"}
	refused := want{value: false, row: untouched}
	proclaimed := func(metadata string) want {
		return want{value: true, row: rowWant{owner: me, token: keptToken, keptExpiry: true, ttl: time.Minute,
			kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, metadata: metadata},
			notify: []notifyWant{wakeUp}} // on distributed_lock: observers read the leader again
	}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: mine.call, want: refused},
		{name: "free, the caller's last", state: free().with(func(r *lockRow) { r.owner = me }), call: mine.call, want: refused},
		{name: "held by the caller: marked an election key", state: heldBy(me), call: mine.call,
			want: proclaimed(`{"election": true, "value": "10.0.0.2"}`)},
		{name: "a leader's new value, its other metadata kept",
			state: heldBy(me).with(func(r *lockRow) { r.metadata = `{"election": true, "value": "10.0.0.1", "pid": 7}` }),
			call:  mine.call, want: proclaimed(`{"election": true, "value": "10.0.0.2", "pid": 7}`)},
		{name: "held by the caller, an older token", state: heldBy(me), call: proclaimArgs{owner: me, token: keptPrevious, value: "x"}.call,
			want: refused},
		{name: "held by another, its token", state: heldBy(other), call: mine.call, want: refused},
		{name: "held by the caller's owner, taken by another role", state: heldBy(me).ofAnotherRole(), call: mine.call, want: refused},
		{name: "expired, the caller's own", state: lapsed(me), call: mine.call, want: refused},
	})
}
