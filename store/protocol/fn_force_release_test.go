package protocol_test

import (
	"testing"
	"time"
)

func TestForceRelease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_force_release")
	op := forceArgs{fn: "distributed_lock_force_release", token: keptToken, actor: "alice", reason: "stuck job"}
	event := eventWant{kind: "force_released", owner: other, token: keptToken, actor: "alice", detail: map[string]any{"reason": "stuck job"}}
	freed := rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, released: releasedNow,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	released := func(row rowWant, events ...eventWant) want {
		return want{outcome: "force_released", owner: other, token: keptToken, row: row, events: append([]eventWant{event}, events...)}
	}
	notHeld := want{outcome: "not_held", row: untouched}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: op.call, want: notHeld},
		{name: "free", state: free(), call: op.call, want: notHeld},
		{name: "held", state: heldBy(other), call: op.call, want: released(freed)},
		{name: "held, no actor or reason: the session's role", state: heldBy(other),
			call: forceArgs{fn: op.fn, token: keptToken}.call, want: func() want {
				w := released(freed)
				w.events = []eventWant{{kind: "force_released", owner: other, token: keptToken, actor: sessionUser(t, f), detail: map[string]any{}}}
				return w
			}()},
		{name: "held, an older token", state: heldBy(other), call: forceArgs{fn: op.fn, token: keptPrevious}.call, want: notHeld},
		{name: "expired", state: lapsed(other), call: op.call, want: released(freed)},
		{name: "queued: handed to the head", state: heldBy(other).queued(w1, w2), call: op.call, want: func() want {
			w := released(handedTo(w1, "acquired", other))
			w.waiters, w.notify = waiters(w2), []notifyWant{handOffTo(w1, "acquired")}
			return w
		}()},
		{name: "watched, nobody queued: a wake-up", state: heldBy(other).withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: op.call, want: func() want {
			row := freed
			row.wakes = &span{0, time.Minute}
			w := released(row)
			w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
			return w
		}()},
		{name: "held at least a period: freed, its at-least point gone", state: heldAtLeast(other), call: op.call, want: released(freed)},
		{name: "held at least a period, queued: handed to the head", state: heldAtLeast(other).queued(w1), call: op.call, want: func() want {
			w := released(handedTo(w1, "acquired", other))
			w.notify = []notifyWant{handOffTo(w1, "acquired")}
			return w
		}()},
		{name: "held with a lock-delay: delay_until set, the event says it", state: heldWithDelay(other), call: op.call, want: func() want {
			row := freed
			row.lockDelay, row.delayUntil = time.Minute, &span{time.Minute - slack, time.Minute}
			w := released(row)
			w.events[0].detail = map[string]any{"reason": "stuck job", "delay_until": anyValue}
			w.check = delayedFor(time.Minute)
			return w
		}()},
		{name: "expired with a lock-delay: the delay runs from the expiry", state: delayedAfterExpiry(other), call: op.call, want: func() want {
			row := freed
			row.lockDelay, row.delayUntil = time.Minute, &span{time.Minute - time.Second - slack, time.Minute - time.Second}
			w := released(row)
			w.events[0].detail = map[string]any{"reason": "stuck job", "delay_until": anyValue}
			return w
		}()},
		{name: "held with a lock-delay, queued: no hand-off inside the delay, a wake-up", state: heldWithDelay(other).queued(w1), call: op.call,
			want: func() want {
				row := freed
				row.lockDelay, row.delayUntil, row.wakes = time.Minute, &span{time.Minute - slack, time.Minute}, &span{0, time.Minute}
				w := released(row)
				w.events[0].detail = map[string]any{"reason": "stuck job", "delay_until": anyValue}
				w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
				return w
			}()},
		{name: "one holder, its token: its slot freed", state: semaphoreOf(2, other, w1), call: forceArgs{fn: op.fn, token: slotTok(2), actor: "alice", reason: "stuck job"}.call,
			want: want{outcome: "force_released", owner: w1, token: slotTok(2), row: untouched,
				slots:  []slotWant{asPrepared, slotReleasedNow(2, w1)},
				events: []eventWant{forcedEvent("force_released", w1, 2)}}},
		{name: "every permit, the group's token: the group ends", state: semaphoreOf(2, other, w1), call: op.call,
			want: want{outcome: "force_released", owner: groupOwner, token: keptToken, row: settled(2),
				slots:  []slotWant{slotReleasedNow(1, other), slotReleasedNow(2, w1)},
				events: []eventWant{forcedEvent("force_released", other, 1), forcedEvent("force_released", w1, 2)}}},
		{name: "a holder's slot, released already: not held", state: sharedBy(other).holding(releasedSlot(w1)),
			call: forceArgs{fn: op.fn, token: slotTok(2)}.call, want: notHeld},
		{name: "promised to a waiter: handed on", state: promisedTo(w1).queued(w2), call: op.call, want: func() want {
			w := released(handedTo(w2, "acquired", w1))
			w.owner = w1
			w.events[0].owner = w1
			w.notify = []notifyWant{handOffTo(w2, "acquired")}
			return w
		}()},
	})
}
