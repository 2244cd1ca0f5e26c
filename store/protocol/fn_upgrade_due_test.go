package protocol_test

import "testing"

func upgradeDueCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_upgrade_due(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// upgradedEvent is the event of the n-th holder's lease, of owner's, ended
// for its upgrade.
func upgradedEvent(owner string, n int) eventWant {
	return eventWant{kind: "upgraded", owner: owner, token: slotTok(n), actor: owner,
		detail: map[string]any{"mode": "shared", "slot": n, "waiter_id": waiterRef(owner)}}
}

// A group ends for an upgrade at the head once its lease is the only live
// one, which ends here.
func TestUpgradeDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_upgrade_due")
	f.run(t, []fnCase{
		{name: "the only live lease: ended, logged", state: sharedBy(me).holding(lapsedSlot(other)).withWaiter(upgradeWaiter(me, 1)),
			call: upgradeDueCall, want: want{value: true, row: untouched, waiters: waiters(me),
				slots: []slotWant{slotReleasedNow(1, me), asPrepared}, events: []eventWant{upgradedEvent(me, 1)}}},
		{name: "another live holder: not due", state: sharedBy(me, other).withWaiter(upgradeWaiter(me, 1)),
			call: upgradeDueCall, want: isQueued(false, me)},
		{name: "a writer at the head: not due", state: sharedBy(me).queued(w1).withWaiter(upgradeWaiter(me, 1)),
			call: upgradeDueCall, want: isQueued(false, w1, me)},
		{name: "its own lease lapsed too: due, nothing to end", state: sharedBy().holding(lapsedSlot(me)).withWaiter(upgradeWaiter(me, 1)),
			call: upgradeDueCall, want: isQueued(true, me)},
	})
}
