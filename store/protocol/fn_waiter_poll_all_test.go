package protocol_test

import (
	"testing"
	"time"
)

// pollAllArgs: owner's waiting set polls, on the case's key and the other
// keys named (nil: all of the set's).
type pollAllArgs struct {
	waiter string
	names  []string
}

func (a pollAllArgs) call(key string, p prepared) (string, []any) {
	keys, ids := []string{key}, []int64{p.waiter(a.waiter)}
	names := a.names
	if names == nil {
		names = p.setNames()
	}
	for _, n := range names {
		keys, ids = append(keys, p.set.keys[n]), append(ids, p.set.prepared[n].waiter(a.waiter))
	}
	return `SELECT q.* FROM distributed_lock_waiter_poll_all(keys => $1, ids => $2, seen_for_us => $3) q
		ORDER BY q.lock_key = $4 DESC LIMIT 1`, []any{keys, ids, (45 * time.Second).Microseconds(), key}
}

func TestWaiterPollAll(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_waiter_poll_all")
	mine := pollAllArgs{waiter: me}
	freeRow := rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, released: stillReleased,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	f.run(t, []fnCase{
		{name: "another key held: still queued, the free key kept for the set",
			state: free().queuedSet(me).and(also{name: "b", state: heldBy(other).queuedSet(me)}), call: mine.call,
			want: want{outcome: "queued", owner: other, token: keptToken, waiterID: me, row: freeRow, refusal: placeIn(1, 1),
				waiters: []waiterWant{{owner: me, seenFor: 45 * time.Second}},
				check:   func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", other, true, me) }}},
		{name: "every key free, the set first on each: handed every key",
			state: free().queuedSet(me).and(also{name: "b", state: lapsed(w1).queuedSet(me)}), call: mine.call,
			want: want{outcome: "acquired", owner: me, token: drawnToken, waiterID: me, remaining: &span{10*time.Second - slack, 10 * time.Second},
				row: handedTo(me, "acquired", other), notify: []notifyWant{handOffTo(me, "acquired")},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "a lapsed lease and a free key, the set first on each: handed both, a steal",
			state: lapsed(other).queuedSet(me).and(also{name: "b", state: free().queuedSet(me)}), call: mine.call,
			want: want{outcome: "stolen", owner: me, token: drawnToken, waiterID: me, remaining: &span{10*time.Second - slack, 10 * time.Second},
				row: handedTo(me, "stolen", other), events: []eventWant{grantEvent("stolen", me, me, other)},
				notify: []notifyWant{handOffTo(me, "stolen")},
				check:  func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "a group whose holders all lapsed and a free key, the set first on each: the group ended, handed every key",
			state: sharedBy().holding(lapsedSlot(other)).queuedSet(me).and(also{name: "b", state: free().queuedSet(me)}), call: mine.call,
			want: want{outcome: "acquired", owner: me, token: drawnToken, waiterID: me, remaining: &span{10*time.Second - slack, 10 * time.Second},
				row: handedFromGroup(me, 0), notify: []notifyWant{handOffTo(me, "acquired")},
				slots: []slotWant{slotReleasedNow(1, other)}, // its lapsed lease ends with the group
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "every key free, another first on one: still queued",
			state: free().queuedSet(me).and(also{name: "b", state: heldBy(w2).queued(w1).queuedSet(me)}), call: mine.call,
			want: want{outcome: "queued", owner: other, token: keptToken, waiterID: me, row: freeRow, refusal: placeIn(1, 1),
				waiters: []waiterWant{{owner: me, seenFor: 45 * time.Second}}}},
		{name: "handed every key before", state: promisedTo(me).and(also{name: "b", state: promisedTo(me)}), call: mine.call,
			want: want{outcome: "acquired", owner: me, token: keptToken, waiterID: me, remaining: &span{8*time.Second - slack, 8 * time.Second},
				row: untouched}},
		{name: "its records lapsed: gone",
			state: free().withWaiter(waiterRow{owner: me, seenFor: -time.Second, inSet: true}).and(
				also{name: "b", state: free().withWaiter(waiterRow{owner: me, seenFor: -time.Second, inSet: true})}),
			call: mine.call, want: want{outcome: "gone", owner: other, token: keptToken, waiterID: me, row: untouched, waiters: waiters(me)}},
		{name: "its wait closes a cycle, the youngest: deadlock",
			state: heldBy(other).queuedSet(me).and(also{name: "c", state: heldBy(me).queued(other)},
				also{name: "b", state: free().queuedSet(me)}),
			call: pollAllArgs{waiter: me, names: []string{"b"}}.call,
			want: want{outcome: "deadlock", owner: other, token: keptToken, waiterID: me, row: untouched,
				events: []eventWant{refusedWait(me, me)},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					want := cycleOf(p, me, "", other, "c")
					if !sameJSON(result["cycle"], want) {
						t.Errorf("cycle %v; want %v", result["cycle"], want)
					}
					// Logged on each key the set waited for, and on no other.
					cycleLogged(t, p.set.main, after.events, me, me, want)
					cycleLogged(t, p.set.keys["b"], p.other(t, "b").events, me, me, want)
					if evs := p.other(t, "c").events; len(evs) != 0 {
						t.Errorf("c has events %+v; want none", evs)
					}
					otherIs(t, p, "b", other, false) // its records are gone from every key
					otherIs(t, p, "c", me, true, other)
				}}},
	})
}
