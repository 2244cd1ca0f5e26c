package protocol_test

import "testing"

func waitCycleCall(_ string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_wait_cycle(start => $1, ts => clock_timestamp())`, []any{me}
}

// cycleIs: the call found this cycle (pairs of owner and key name: "" the
// case's key, else the set's key of that name) and its youngest record is
// youngestOf's on the key named so; no steps: none.
func cycleIs(youngest [2]string, steps ...[2]string) func(t *testing.T, result map[string]any, p prepared, _ observed) {
	return func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		if len(steps) == 0 {
			if result["cycle"] != nil || result["youngest"] != nil {
				t.Errorf("cycle %v, youngest %v; want none", result["cycle"], result["youngest"])
			}
			return
		}
		keyOf := func(name string) string {
			if name == "" {
				return p.set.main
			}
			return p.set.keys[name]
		}
		var want []any
		for _, s := range steps {
			want = append(want, map[string]any{"owner": s[0], "key": keyOf(s[1])})
		}
		if !sameJSON(result["cycle"], want) {
			t.Errorf("cycle %v; want %v", result["cycle"], want)
		}
		id := p.waiter(youngest[0])
		if youngest[1] != "" {
			id = p.set.prepared[youngest[1]].waiter(youngest[0])
		}
		if !sameJSON(result["youngest"], id) {
			t.Errorf("youngest %v; want %d, %s's record on %s", result["youngest"], id, youngest[0], keyOf(youngest[1]))
		}
	}
}

func TestWaitCycle(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_wait_cycle")
	f.run(t, []fnCase{
		{name: "no wait", state: heldBy(other).and(also{name: "b", state: heldBy(me)}), call: waitCycleCall,
			want: want{row: untouched, check: cycleIs([2]string{})}},
		{name: "a chain that ends", state: heldBy(other).queued(me).and(also{name: "b", state: heldBy(w1).queued(other)}), call: waitCycleCall,
			want: want{row: untouched, waiters: waiters(me), check: cycleIs([2]string{})}},
		// The edges follow modes: a shared waiter does not wait for shared holders.
		{name: "a shared waiter beside shared holders: no wait for them",
			state: sharedBy(other).withWaiter(waiterRow{owner: me, seenFor: 30e9, mode: "shared"}).and(
				also{name: "b", state: heldBy(me).queued(other)}),
			call: waitCycleCall, want: want{row: untouched, waiters: waiters(me), check: cycleIs([2]string{})}},
		{name: "a permit waiter behind a full semaphore's holder who waits for the caller: a cycle",
			state: semaphoreOf(1, other).withWaiter(waiterRow{owner: me, seenFor: 30e9, mode: "semaphore", permits: 1}).and(
				also{name: "b", state: heldBy(me).queued(other)}),
			call: waitCycleCall, want: want{row: untouched, waiters: waiters(me),
				check: cycleIs([2]string{me, ""}, [2]string{me, ""}, [2]string{other, "b"})}},
		{name: "an exclusive waiter behind shared holders who wait for the caller: a cycle",
			state: sharedBy(other).queued(me).and(also{name: "b", state: heldBy(me).queued(other)}),
			call:  waitCycleCall, want: want{row: untouched, waiters: waiters(me),
				check: cycleIs([2]string{me, ""}, [2]string{me, ""}, [2]string{other, "b"})}},
		{name: "two holders waiting for each other", state: heldBy(other).queued(me).and(also{name: "b", state: heldBy(me).queued(other)}),
			call: waitCycleCall, want: want{row: untouched, waiters: waiters(me),
				check: cycleIs([2]string{me, ""}, [2]string{me, ""}, [2]string{other, "b"})}},
		{name: "three owners, one queued behind the caller",
			state: heldBy(other).queued(me).and(also{name: "b", state: heldBy(w1).queued(other)}, also{name: "c", state: heldBy(w2).queued(me, w1)}),
			call:  waitCycleCall, want: want{row: untouched, waiters: waiters(me),
				check: cycleIs([2]string{me, ""}, [2]string{me, ""}, [2]string{other, "b"}, [2]string{w1, "c"})}},
		{name: "a waiting set first on a free key, another queued behind it",
			state: heldBy(other).queuedSet(me).and(also{name: "b", state: free().queuedSet(me).queued(other)}),
			call:  waitCycleCall, want: want{row: untouched, waiters: waiters(me),
				check: cycleIs([2]string{me, ""}, [2]string{me, ""}, [2]string{other, "b"})}},
		{name: "a lapsed record is no wait", state: heldBy(other).queued(me).and(also{name: "b", state: heldBy(me).withWaiter(waiterRow{owner: other, seenFor: -1})}),
			call: waitCycleCall, want: want{row: untouched, waiters: waiters(me), check: cycleIs([2]string{})}},
	})
}
