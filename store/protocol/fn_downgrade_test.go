package protocol_test

import (
	"testing"
	"time"
)

// downgradeArgs are the arguments of distributed_lock_downgrade but the key.
type downgradeArgs struct {
	owner string
	token tok
}

func (a downgradeArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_downgrade(key => $1, owner => $2, token => $3, ttl_us => $4)`,
		[]any{key, a.owner, tokenArg(p, a.token), time.Minute.Microseconds()}
}

// downgraded is the answer of a downgrade of me's lease: its shared lease
// in slot 1 (a drawn token), the row its group's, the event naming both.
func downgraded(slots []slotWant, waiting []waiterWant, notify []notifyWant) want {
	return want{outcome: "downgraded", owner: me, token: drawnToken,
		row:   formed("shared", 0, "acquired", me, keptToken),
		slots: append([]slotWant{slotGranted(me, "acquired", time.Minute)}, slots...), waiters: waiting, notify: notify,
		events: []eventWant{{kind: "downgraded", owner: me, token: drawnToken, actor: me, prevOwner: me, prevToken: keptToken,
			detail: map[string]any{"mode": "shared", "slot": 1}}}}
}

// An exclusive lease becomes its group's first shared lease under the
// row's lock: the readers at the head join it, a writer keeps its place.
func TestDowngrade(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_downgrade")
	mine := downgradeArgs{owner: me, token: keptToken}
	notHeld := want{outcome: "not_held", row: untouched}
	f.run(t, []fnCase{
		{name: "held: a shared lease with a new token", state: heldBy(me), call: mine.call, want: downgraded(nil, nil, nil)},
		{name: "readers queued at the head: granted beside it, up to the writer",
			state: heldBy(me).withWaiter(sharedWaiter(w1)).withWaiter(sharedWaiter(w2)).queued(other), call: mine.call,
			want: downgraded([]slotWant{slotHandedTo(w1, "acquired"), slotHandedTo(w2, "acquired")}, waiters(other),
				[]notifyWant{slotHandOffTo(w1, "acquired", "shared"), slotHandOffTo(w2, "acquired", "shared")})},
		{name: "a writer at the head: it and the reader behind it wait on",
			state: heldBy(me).queued(w1).withWaiter(sharedWaiter(w2)), call: mine.call,
			want: downgraded(nil, waiters(w1, w2), nil)},
		{name: "another owner's lease", state: heldBy(other), call: mine.call, want: notHeld},
		{name: "another role's lease of the same owner", state: heldBy(me).ofAnotherRole(), call: mine.call, want: notHeld},
		{name: "an older token", state: heldBy(me), call: downgradeArgs{owner: me, token: keptPrevious}.call, want: notHeld},
		{name: "run out", state: lapsed(me), call: mine.call, want: notHeld},
		{name: "free", state: free(), call: mine.call, want: notHeld},
		{name: "a group's token", state: sharedBy(me), call: mine.call, want: notHeld},
		{name: "no row", state: noRow(), call: mine.call, want: notHeld},
	})
}
