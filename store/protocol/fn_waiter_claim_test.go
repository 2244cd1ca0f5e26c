package protocol_test

import (
	"testing"
	"time"
)

// waiterClaimArgs: the claim of a hand-off to the record queued by owner
// (as prepared), the way a waiter answers a NOTIFY that names it.
type waiterClaimArgs struct{ owner string }

func (a waiterClaimArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_waiter_claim(key => $1, id => $2)`, []any{key, p.waiter(a.owner)}
}

// A NOTIFY is a hint: only a running grant to the caller's own record,
// queued by the caller's own role, is claimed (renewed to its TTL);
// anything else is answered not_handed and changes nothing.
func TestWaiterClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_waiter_claim")
	mine := waiterClaimArgs{owner: me}
	claimed := func(kind string) want {
		return want{outcome: kind, owner: me, token: keptToken, row: rowWant{
			owner: me, token: keptToken, expires: about(time.Minute), ttl: time.Minute, kind: kind,
			prevOwner: "earlier", prevToken: keptPrevious, renewals: 1, handedTo: me, wakes: &span{0, time.Minute}}}
	}
	notHanded := want{outcome: "not_handed", row: untouched}
	f.run(t, []fnCase{
		{name: "handed to the caller: claimed", state: promisedTo(me), call: mine.call, want: claimed("acquired")},
		{name: "handed to the caller as a steal: claimed, its kind kept",
			state: promisedTo(me).with(func(r *lockRow) { r.kind = "stolen" }), call: mine.call, want: claimed("stolen")},
		{name: "handed to the caller's owner, queued by another role: not handed", state: promisedTo(me).ofAnotherRole(),
			call: mine.call, want: notHanded},
		{name: "its claim window ran out: not handed", state: lapsedHandOffTo(me), call: mine.call, want: notHanded},
		{name: "still queued behind another's lease (a forged NOTIFY): not handed", state: heldBy(other).queued(me),
			call: mine.call, want: want{outcome: "not_handed", row: untouched, waiters: waiters(me)}},
		{name: "released since: not handed", state: promisedTo(me).with(func(r *lockRow) { r.freedAgo = time.Second }),
			call: mine.call, want: notHanded},
	})
}
