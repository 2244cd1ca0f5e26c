package protocol_test

import (
	"testing"
	"time"
)

// pollArgs: the waiter (by owner) that polls, and how long its record must
// stay live.
type pollArgs struct {
	waiter string
	seen   time.Duration
}

func (a pollArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_waiter_poll(key => $1, id => $2, seen_for_us => $3)`,
		[]any{key, p.waiter(a.waiter), a.seen.Microseconds()}
}

func TestWaiterPoll(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_waiter_poll")
	mine := pollArgs{waiter: me, seen: 45 * time.Second}
	heldRow := rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
		prevOwner: "earlier", prevToken: keptPrevious}
	stillQueued := func(holder string, token tok, row rowWant, ahead ...string) want {
		return want{outcome: "queued", owner: holder, token: token, waiterID: me, row: row,
			waiters: append(waiters(ahead...), waiterWant{owner: me, seenFor: 45 * time.Second}), check: dbNowReturned,
			refusal: placeIn(len(ahead)+1, len(ahead)+1)}
	}
	handedHere := func(kind, from string) want {
		return want{outcome: kind, owner: me, token: drawnToken, waiterID: me, remaining: &span{10*time.Second - slack, 10 * time.Second},
			row: handedTo(me, kind, from), notify: []notifyWant{handOffTo(me, kind)}, check: dbNowReturned}
	}
	inDelay := func(w want, d time.Duration) want {
		w.refusal.delay = &span{d - slack, d}
		return w
	}
	f.run(t, []fnCase{
		{name: "expired, in its lock-delay, the caller at the head: still queued", state: delayedAfterExpiry(other).queued(me),
			call: mine.call, want: inDelay(stillQueued(other, keptToken, untouched), time.Minute-time.Second)},
		{name: "force-released, in its lock-delay, the caller second", state: delayedAfterRelease(other).queued(w1, me),
			call: mine.call, want: inDelay(stillQueued(other, keptToken, untouched, w1), 30*time.Second)},
		{name: "expired, its lock-delay over, the caller at the head: stolen for it", state: delayOver(other).queued(me), call: mine.call,
			want: func() want {
				w := handedHere("stolen", other)
				w.events = []eventWant{grantEvent("stolen", me, me, other)}
				return w
			}()},
		{name: "handed a lease with a lock-delay", state: free().withWaiter(waiterRow{owner: me, seenFor: 30 * time.Second, lockDelay: 5 * time.Second}),
			call: mine.call, want: func() want {
				w := handedHere("acquired", other)
				w.row.lockDelay = 5 * time.Second
				return w
			}()},
		{name: "no row", state: noRow(), call: mine.call, want: want{outcome: "gone", waiterID: me, row: untouched}},
		{name: "queued behind a holder who waits for a key the caller holds, the younger wait: deadlock",
			state: heldBy(other).queued(me).and(also{name: "b", state: heldBy(me).queued(other)}), call: mine.call, want: want{
				outcome: "deadlock", owner: other, token: keptToken, waiterID: me, row: untouched,
				events: []eventWant{refusedWait(me, me)},
				check: func(t *testing.T, result map[string]any, p prepared, after observed) {
					want := cycleOf(p, me, "", other, "b")
					if !sameJSON(result["cycle"], want) {
						t.Errorf("cycle %v; want %v", result["cycle"], want)
					}
					cycleLogged(t, p.set.main, after.events, me, me, want)
					otherIs(t, p, "b", me, true, other) // the older wait stands
				}}},
		{name: "held by another, queued", state: heldBy(other).queued(me), call: mine.call, want: stillQueued(other, keptToken, untouched)},
		{name: "held by another, queued, the wake-up running out", state: heldBy(other).with(func(r *lockRow) { r.wakeFor = 5 * time.Second }).queued(me),
			call: mine.call, want: func() want {
				row := heldRow
				row.wakes = &span{90*time.Second - slack, 90 * time.Second}
				return stillQueued(other, keptToken, row)
			}()},
		{name: "held by another, the record gone", state: heldBy(other), call: mine.call, want: want{
			outcome: "gone", owner: other, token: keptToken, waiterID: me, row: untouched}},
		{name: "held by another, the record queued by another role: gone to the caller, left as it is",
			state: heldBy(other).queued(me).ofAnotherRole(), call: mine.call, want: want{
				outcome: "gone", owner: other, token: keptToken, waiterID: me, row: untouched, waiters: waiters(me)}},
		{name: "promised to a record queued by another role: gone to the caller", state: promisedTo(me).ofAnotherRole(),
			call: mine.call, want: want{outcome: "gone", owner: me, token: keptToken, waiterID: me, row: untouched}},
		{name: "promised to the caller", state: promisedTo(me).queued(w2), call: mine.call, want: want{
			outcome: "acquired", owner: me, token: keptToken, waiterID: me, remaining: &span{8*time.Second - slack, 8 * time.Second},
			row: untouched, waiters: waiters(w2)}},
		{name: "promised to the caller as a steal", state: promisedTo(me).with(func(r *lockRow) { r.kind = "stolen" }), call: mine.call, want: want{
			outcome: "stolen", owner: me, token: keptToken, waiterID: me, remaining: &span{8*time.Second - slack, 8 * time.Second}, row: untouched}},
		{name: "lapsed hand-off to the caller", state: lapsedHandOffTo(me).queued(w2), call: mine.call, want: want{
			outcome: "gone", owner: me, token: keptToken, waiterID: me, row: untouched, waiters: waiters(w2)}},
		{name: "free, the caller at the head: handed to it", state: free().queued(me), call: mine.call, want: handedHere("acquired", other)},
		{name: "expired, the caller at the head: stolen for it", state: lapsed(other).queued(me), call: mine.call, want: func() want {
			w := handedHere("stolen", other)
			w.events = []eventWant{grantEvent("stolen", me, me, other)}
			return w
		}()},
		{name: "a running shared group, the caller queued: still queued", state: sharedBy(other).queued(me), call: mine.call,
			want: stillQueued(groupOwner, keptToken, untouched)},
		{name: "a group whose holders all lapsed, the caller at the head: ended, handed to it",
			state: sharedBy().holding(lapsedSlot(other)).queued(me), call: mine.call, want: func() want {
				w := handedHere("acquired", groupOwner)
				w.slots = []slotWant{slotReleasedNow(1, other)} // its lapsed lease ends with the group
				return w
			}()},
		{name: "a semaphore whose holders all lapsed, another at the head: ended, handed to it",
			state: semaphoreOf(2).holding(lapsedSlot(other)).queued(w1, me), call: mine.call, want: func() want {
				row := handedFromGroup(w1, 2)
				w := stillQueued(w1, drawnToken, row)
				w.notify = []notifyWant{handOffTo(w1, "acquired")}
				w.slots = []slotWant{slotReleasedNow(1, other)}
				return w
			}()},
		{name: "free, another at the head: handed to it", state: free().queued(w1, me), call: mine.call, want: func() want {
			w := stillQueued(w1, drawnToken, handedTo(w1, "acquired", other))
			w.notify = []notifyWant{handOffTo(w1, "acquired")}
			return w
		}()},
	})
}
