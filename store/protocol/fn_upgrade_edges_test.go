package protocol_test

import "testing"

// upgradeEdgesFrom calls the search's step for frontier and start, on the
// case's key only (the schema is shared).
func upgradeEdgesFrom(frontier []string, start string) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT json_agg(e.waiter || '→' || e.next ORDER BY e.waiter) AS result
FROM distributed_lock_upgrade_edges(frontier => $2, start => $3, ts => clock_timestamp()) e WHERE e.lock_key = $1`,
			[]any{key, frontier, start}
	}
}

// noSteps is a NULL result (no steps), the waiters left as they were.
func noSteps(owners ...string) want {
	w := isQueued(nil, owners...)
	w.check = resultIs(0)
	return w
}

// A wait on a key start holds is a step to start, whatever the queue ahead.
func TestUpgradeEdges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_upgrade_edges")
	upgrading := sharedBy(me, other).withWaiter(upgradeWaiter(me, 1)).queued(other)
	f.run(t, []fnCase{
		{name: "a holder waiting behind start's upgrade: a step to start", state: upgrading,
			call: upgradeEdgesFrom([]string{other}, me), want: isQueued([]any{"other→me"}, me, other)},
		{name: "start holds nothing of the key: none", state: upgrading,
			call: upgradeEdgesFrom([]string{other}, w1), want: noSteps(me, other)},
		{name: "start's own wait: none", state: upgrading,
			call: upgradeEdgesFrom([]string{me}, me), want: noSteps(me, other)},
		{name: "start's lease lapsed: none", state: sharedBy(other).holding(lapsedSlot(me)).queued(other),
			call: upgradeEdgesFrom([]string{other}, me), want: noSteps(other)},
	})
}
