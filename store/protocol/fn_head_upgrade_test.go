package protocol_test

import (
	"testing"
	"time"
)

func headUpgradeCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_head_upgrade(key => $1, ts => clock_timestamp()) AS result`, []any{key}
}

// upgradeWaiter is owner's upgrade (17_convert.sql), queued live, giving up
// the lease of the state's n-th holder.
func upgradeWaiter(owner string, n int) waiterRow {
	return waiterRow{owner: owner, seenFor: 30 * time.Second, waitedFor: 2 * time.Second, upgradeFrom: n}
}

// resultIs checks a scalar result: the token of the state's n-th holder
// (0: NULL).
func resultIs(n int) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		var want any
		if n > 0 {
			want = p.slots[n-1]
		}
		if !sameJSON(result["result"], want) {
			t.Errorf("result %v; want %v", result["result"], want)
		}
	}
}

// The head of the queue names the lease it gives up only when it is an
// upgrade.
func TestHeadUpgrade(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_head_upgrade")
	f.run(t, []fnCase{
		{name: "an upgrade at the head: its lease", state: sharedBy(other, me).withWaiter(upgradeWaiter(me, 2)),
			call: headUpgradeCall, want: want{row: untouched, waiters: waiters(me), check: resultIs(2)}},
		{name: "a writer at the head, the upgrade behind it", state: sharedBy(me).queued(w1).withWaiter(upgradeWaiter(me, 1)),
			call: headUpgradeCall, want: want{row: untouched, waiters: waiters(w1, me), check: resultIs(0)}},
		{name: "an upgrade's record lapsed: the next is the head",
			state: sharedBy(me).withWaiter(waiterRow{owner: me, seenFor: -time.Second, upgradeFrom: 1}).queued(w1),
			call:  headUpgradeCall, want: want{row: untouched, waiters: waiters(me, w1), check: resultIs(0)}},
		{name: "nobody queued", state: sharedBy(me), call: headUpgradeCall, want: want{row: untouched, check: resultIs(0)}},
	})
}
