package protocol_test

import (
	"testing"
	"time"
)

// endDelayArgs are distributed_lock_end_delay's arguments but the key.
type endDelayArgs struct {
	actor, reason string
}

func (a endDelayArgs) call(key string, _ prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_end_delay(key => $1, event_actor => $2, reason => $3)`,
		[]any{key, null(a.actor), null(a.reason)}
}

// endedAt: the result's delay_until is the end the delay had, d from the
// read after the call.
func endedAt(d time.Duration) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		at, ok := result["delay_until"].(time.Time)
		if s := (span{d - slack, d}); !ok || !s.holds(at.Sub(after.row.ReadAt)) {
			t.Errorf("delay_until %v; want about %v from the read (%v)", result["delay_until"], d, after.row.ReadAt)
		}
	}
}

// An operator ends a key's lock-delay: the delay is gone from the row, the
// key goes to the head of its queue at once, and an event says who, why and
// which delay. A key in no delay is left alone.
func TestEndDelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_end_delay")
	op := endDelayArgs{actor: "alice", reason: "holder confirmed dead"}
	notDelayed := want{outcome: "not_delayed", row: untouched}
	event := func(actor string, detail map[string]any) eventWant {
		return eventWant{kind: "delay_ended", owner: other, token: keptToken, actor: actor, detail: detail}
	}
	logged := event("alice", map[string]any{"reason": "holder confirmed dead", "delay_until": anyValue})
	expiredRow := rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
		prevOwner: "earlier", prevToken: keptPrevious}
	releasedRow := expiredRow
	releasedRow.released = stillReleased
	ended := func(row rowWant, left time.Duration, events ...eventWant) want {
		return want{outcome: "delay_ended", owner: other, token: keptToken, row: row,
			events: append([]eventWant{logged}, events...), check: endedAt(left)}
	}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: op.call, want: notDelayed},
		{name: "held with a lock-delay", state: heldWithDelay(other), call: op.call, want: notDelayed},
		{name: "released cleanly", state: free().with(func(r *lockRow) { r.lockDelay = time.Minute }), call: op.call, want: notDelayed},
		{name: "expired, no lock-delay", state: lapsed(other), call: op.call, want: notDelayed},
		{name: "expired, its lock-delay over", state: delayOver(other), call: op.call, want: notDelayed},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: op.call,
			want: ended(expiredRow, time.Minute-time.Second)},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: op.call,
			want: ended(releasedRow, 30*time.Second)},
		{name: "in its lock-delay, no actor or reason: the session's role", state: delayedAfterExpiry(other), call: endDelayArgs{}.call,
			want: func() want {
				w := ended(expiredRow, time.Minute-time.Second)
				w.events = []eventWant{event(sessionUser(t, f), map[string]any{"delay_until": anyValue})}
				return w
			}()},
		{name: "expired, in its lock-delay, queued: handed to the head, a steal", state: delayedAfterExpiry(other).queued(w1, w2), call: op.call,
			want: func() want {
				w := ended(handedTo(w1, "stolen", other), time.Minute-time.Second, grantEvent("stolen", w1, w1, other))
				w.waiters, w.notify = waiters(w2), []notifyWant{handOffTo(w1, "stolen")}
				return w
			}()},
		{name: "force-released, in its lock-delay, queued: handed to the head", state: delayedAfterRelease(other).queued(w1), call: op.call,
			want: func() want {
				w := ended(handedTo(w1, "acquired", other), 30*time.Second)
				w.notify = []notifyWant{handOffTo(w1, "acquired")}
				return w
			}()},
		{name: "in its lock-delay, watched, nobody queued: a wake-up", call: op.call,
			state: delayedAfterExpiry(other).withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), want: func() want {
				row := expiredRow
				row.wakes = &span{0, time.Minute}
				w := ended(row, time.Minute-time.Second)
				w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
				return w
			}()},
	})
}
