package protocol_test

import "testing"

// refuseArgs: owner's records on the case's key and the set's keys named.
type refuseArgs struct {
	owner string
	names []string
}

func (a refuseArgs) call(key string, p prepared) (string, []any) {
	var ids []int64
	if id, ok := p.waiterIDs[a.owner]; ok {
		ids = append(ids, id)
	}
	for _, n := range a.names {
		ids = append(ids, p.set.prepared[n].waiterIDs[a.owner])
	}
	return `SELECT distributed_lock_refuse_deadlock(owner => $1, ids => $2, ts => clock_timestamp()) AS result`, []any{a.owner, ids}
}

func TestRefuseDeadlock(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_refuse_deadlock")
	refused := func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["result"] == nil {
			t.Error("no cycle; want the one the wait closes")
		}
	}
	stands := func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["result"] != nil {
			t.Errorf("cycle %v; want the wait to stand", result["result"])
		}
	}
	cycle := heldBy(other).queued(me).and(also{name: "b", state: heldBy(me).queued(other)})
	f.run(t, []fnCase{
		{name: "the youngest wait on a cycle: refused, its record removed", state: cycle, call: refuseArgs{owner: me}.call,
			want: want{row: untouched, check: refused}},
		{name: "an older wait on a cycle: it stands", state: cycle, call: refuseArgs{owner: other, names: []string{"b"}}.call,
			want: want{row: untouched, waiters: waiters(me), check: stands}},
		{name: "no cycle", state: heldBy(other).queued(me), call: refuseArgs{owner: me}.call,
			want: want{row: untouched, waiters: waiters(me), check: stands}},
		{name: "a waiting set first on a free key: refused, the key handed to the next",
			state: free().queuedSet(me).queued(w1).and(also{name: "c", state: heldBy(me).queued(other)},
				also{name: "d", state: heldBy(other).queuedSet(me)}),
			call: refuseArgs{owner: me, names: []string{"d"}}.call,
			want: want{row: handedTo(w1, "acquired", other), notify: []notifyWant{handOffTo(w1, "acquired")},
				check: func(t *testing.T, result map[string]any, p prepared, a observed) {
					refused(t, result, p, a)
					otherIs(t, p, "d", other, true)
				}}},
	})
}
