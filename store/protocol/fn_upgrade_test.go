package protocol_test

import (
	"testing"
	"time"
)

// upgradeArgs are the arguments of distributed_lock_upgrade but the key:
// the lease of the state's n-th holder, for owner.
type upgradeArgs struct {
	owner string
	n     int
	wait  bool
}

func (a upgradeArgs) call(key string, p prepared) (string, []any) {
	token := tokenArg(p, keptToken) // no such holder: the row's own
	if a.n > 0 && a.n <= len(p.slots) {
		token = p.slots[a.n-1]
	}
	return `SELECT * FROM distributed_lock_upgrade(key => $1, owner => $2, token => $3, ttl_us => $4,
    claim_us => $5, seen_for_us => $6, wait => $7)`,
		[]any{key, a.owner, token, time.Minute.Microseconds(), (10 * time.Second).Microseconds(),
			(30 * time.Second).Microseconds(), a.wait}
}

// upgradedAtOnce is the key granted to the caller's own upgrade in the
// call and claimed: an exclusive lease of a minute, the group's row before it.
func upgradedAtOnce(slots []slotWant) want {
	ended := upgradedEvent(me, 1)
	ended.detail["waiter_id"] = anyValue // the call's own record
	return want{outcome: "acquired", owner: me, token: drawnToken,
		row: rowWant{owner: me, token: drawnToken, expires: about(time.Minute), ttl: time.Minute, kind: "acquired",
			prevOwner: groupOwner, prevToken: keptToken, handedTo: aRecordOfTheCall, renewals: 1},
		slots: slots, notify: []notifyWant{handOffTo(me, "acquired")},
		events: append([]eventWant{ended},
			eventWant{kind: "acquired", owner: me, token: drawnToken, actor: me, prevOwner: groupOwner, prevToken: keptToken,
				detail: map[string]any{"waited_ms": anyValue, "waiter_id": anyValue}})}
}

// A holder's lease becomes the key's: at once when it is the only one and
// nobody is queued, else it queues for the key (with wait), keeping it.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_upgrade")
	now, wait := upgradeArgs{owner: me, n: 1}, upgradeArgs{owner: me, n: 1, wait: true}
	notHeld := want{outcome: "not_held", row: untouched}
	f.run(t, []fnCase{
		{name: "the only holder: the key, a new token", state: sharedBy(me), call: now.call,
			want: upgradedAtOnce([]slotWant{slotReleasedNow(1, me)})},
		{name: "the only live holder, another's lapsed: the key", state: sharedBy(me).holding(lapsedSlot(other)), call: wait.call,
			want: upgradedAtOnce([]slotWant{slotReleasedNow(1, me), {owner: other, token: slotTok(2), keptExpiry: true,
				ttl: time.Minute, released: releasedNow}})},
		{name: "another holder, no wait: held, nothing queued", state: sharedBy(me, other), call: now.call,
			want: want{outcome: "held", owner: groupOwner, token: keptToken, row: untouched, refusal: queueOf(0)}},
		{name: "a writer queued, no wait: queued, nothing queued", state: sharedBy(me).queued(w1), call: now.call,
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, row: untouched, waiters: waiters(w1),
				refusal: queueOf(1)}},
		{name: "another holder, wait: queued, keeping the lease", state: sharedBy(me, other), call: wait.call,
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, waiterID: me,
				row: func() rowWant {
					w := formed("shared", 0, "acquired", "earlier", keptPrevious)
					w.token = keptToken
					w.wakes = &span{time.Minute - slack, time.Minute}
					return w
				}(),
				waiters: []waiterWant{{owner: me, seenFor: 30 * time.Second}}, refusal: placeIn(1, 1)}},
		{name: "a writer queued ahead, wait: a deadlock (it waits for this lease)", state: sharedBy(me).queued(w1),
			call: wait.call,
			want: want{outcome: "deadlock", owner: groupOwner, token: keptToken, row: untouched, waiters: waiters(w1),
				refusal: placeIn(0, 1), events: []eventWant{{kind: "deadlock_refused", owner: me, actor: me,
					detail: map[string]any{"cycle": anyValue}}}}},
		{name: "the other holder waits to upgrade too: a deadlock, nothing queued",
			state: sharedBy(me, other).withWaiter(upgradeWaiter(other, 2)), call: wait.call,
			want: want{outcome: "deadlock", owner: groupOwner, token: keptToken, row: untouched, waiters: waiters(other),
				refusal: placeIn(0, 1), events: []eventWant{{kind: "deadlock_refused", owner: me, actor: me,
					detail: map[string]any{"cycle": anyValue}}},
				check: func(t *testing.T, result map[string]any, _ prepared, _ observed) {
					if result["cycle"] == nil {
						t.Error("no cycle named")
					}
				}}},
		{name: "another owner's lease", state: sharedBy(other), call: upgradeArgs{owner: me, n: 1}.call, want: notHeld},
		{name: "another role's lease of the same owner", state: sharedBy(me).ofAnotherRole(), call: now.call, want: notHeld},
		{name: "its lease run out", state: sharedBy().holding(lapsedSlot(me)), call: now.call, want: notHeld},
		{name: "an exclusive lease", state: heldBy(me), call: upgradeArgs{owner: me}.call, want: notHeld},
		{name: "no row", state: noRow(), call: now.call, want: notHeld},
	})
}
