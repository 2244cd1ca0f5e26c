package protocol_test

import (
	"testing"
	"time"
)

// leaveArgs: the waiter (by owner) that leaves, and the release's event.
type leaveArgs struct {
	waiter     string
	logRelease bool
	actor      string
}

func (a leaveArgs) call(key string, p prepared) (string, []any) {
	return `SELECT distributed_lock_waiter_leave(key => $1, id => $2, log_release => $3, event_actor => $4) AS result`,
		[]any{key, p.waiter(a.waiter), a.logRelease, null(a.actor)}
}

func TestWaiterLeave(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_waiter_leave")
	mine := leaveArgs{waiter: me}
	// givenBack is a lease handed to the caller, released unclaimed.
	givenBack := func(expiry rowWant) rowWant {
		expiry.owner, expiry.token, expiry.ttl, expiry.released = me, keptToken, time.Minute, releasedNow
		expiry.kind, expiry.prevOwner, expiry.prevToken, expiry.handedTo = "acquired", "earlier", keptPrevious, me
		expiry.keptExpiry, expiry.wakes = true, &span{0, time.Minute}
		return expiry
	}
	f.run(t, []fnCase{
		{name: "queued", state: heldBy(other).queued(me), call: mine.call, want: want{outcome: "left", row: untouched}},
		{name: "queued, logging its grants: its wait logged",
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, waitedFor: 4 * time.Second, logGrants: true}),
			call:  mine.call, want: want{outcome: "left", row: untouched, events: []eventWant{{kind: "gave_up", owner: me, actor: me,
				detail: map[string]any{"waited_ms": msWithin{4 * time.Second, 4*time.Second + slack}, "waiter_id": anyValue}}}}},
		{name: "queued behind another", state: heldBy(other).queued(w1, me), call: mine.call, want: want{
			outcome: "left", row: untouched, waiters: waiters(w1)}},
		{name: "no row", state: noRow(), call: mine.call, want: want{outcome: "none", row: untouched}},
		{name: "held by another, the record gone", state: heldBy(other), call: mine.call, want: want{outcome: "none", row: untouched}},
		{name: "the record queued by another role: none, it stays", state: heldBy(other).queued(me).ofAnotherRole(),
			call: mine.call, want: want{outcome: "none", row: untouched, waiters: waiters(me)}},
		{name: "promised to a record queued by another role: none, kept", state: promisedTo(me).ofAnotherRole(),
			call: mine.call, want: want{outcome: "none", row: untouched}},
		{name: "promised to the caller, nobody queued: released, nobody to wake", state: promisedTo(me), call: mine.call, want: want{
			outcome: "passed_on", row: givenBack(rowWant{})}},
		{name: "promised to the caller, logged", state: promisedTo(me), call: leaveArgs{waiter: me, logRelease: true, actor: "svc"}.call, want: want{
			outcome: "passed_on", row: givenBack(rowWant{}),
			events: []eventWant{{kind: "released", owner: me, token: keptToken, actor: "svc", detail: map[string]any{"unclaimed": true}}}}},
		{name: "promised to the caller, queued: handed to the next", state: promisedTo(me).queued(w2), call: mine.call, want: want{
			outcome: "passed_on", row: handedTo(w2, "acquired", me), notify: []notifyWant{handOffTo(w2, "acquired")}}},
		{name: "promised to the caller, claimed: kept", state: promisedTo(me).with(func(r *lockRow) { r.renewals = 1 }), call: mine.call, want: want{
			outcome: "none", row: untouched}},
		{name: "lapsed hand-off to the caller: released", state: lapsedHandOffTo(me), call: mine.call, want: want{
			outcome: "passed_on", row: givenBack(rowWant{})}},
		{name: "promised to the caller, a lapsed waiter on a wake channel: released, that process woken",
			state: promisedTo(me).withWaiter(waiterRow{owner: w2, seenFor: -time.Second, channel: chanB}), call: mine.call, want: want{
				outcome: "passed_on", row: givenBack(rowWant{}), waiters: []waiterWant{{owner: w2, channel: chanB}},
				notify: []notifyWant{wakeUp.on(chanB)}}},
	})
}
