package protocol_test

import (
	"testing"
	"time"
)

// releaseArgs are distributed_lock_release's arguments but the key and
// token; token says which token the call names.
type releaseArgs struct {
	owner      string
	token      tok
	lazy       bool
	logRelease bool
	actor      string
}

func (a releaseArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_release(key => $1, owner => $2, token => $3,
		lazy_commit => $4, log_release => $5, event_actor => $6)`,
		[]any{key, a.owner, tokenArg(p, a.token), a.lazy, a.logRelease, null(a.actor)}
}

// handedTo is the row of a key a release (or a poll, or a force-release)
// handed to waiter owner, who asked for a minute with a ten-second claim
// window, from the lease of from.
func handedTo(owner, kind, from string) rowWant {
	return rowWant{owner: owner, token: drawnToken, expires: about(10 * time.Second), ttl: time.Minute,
		kind: kind, prevOwner: from, prevToken: keptToken, handedTo: owner}
}

func handOffTo(owner, kind string) notifyWant {
	return notifyWant{handOffTo: owner, kind: kind, ttl: time.Minute, window: 10 * time.Second}
}

// grantEvent is the event of a hand-off to waiter owner, logged as that
// waiter's grant.
func grantEvent(kind, owner, actor, from string) eventWant {
	return eventWant{kind: kind, owner: owner, token: drawnToken, actor: actor, prevOwner: from, prevToken: keptToken,
		detail: map[string]any{"waited_ms": anyValue, "waiter_id": waiterRef(owner)}}
}

func TestRelease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_release")
	mine := releaseArgs{owner: me, token: keptToken}
	logged := releaseArgs{owner: me, token: keptToken, lazy: true, logRelease: true, actor: "svc"}
	freed := rowWant{owner: me, token: keptToken, keptExpiry: true, ttl: time.Minute, released: releasedNow,
		kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious}
	released := func(row rowWant) want {
		return want{outcome: "released", owner: me, token: keptToken, row: row}
	}
	notHeld := want{outcome: "not_held", row: untouched}
	loggingWaiter := waiterRow{owner: w1, seenFor: 30 * time.Second, waitedFor: 2 * time.Second, logGrants: true, actor: "w1-svc"}
	lapsedWaiter := waiterRow{owner: w1, seenFor: -time.Second}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: mine.call, want: notHeld},
		{name: "free", state: free().with(func(r *lockRow) { r.owner = me }), call: mine.call, want: notHeld},
		{name: "held by the caller", state: heldBy(me), call: mine.call, want: released(freed)},
		{name: "held by the caller, logged", state: heldBy(me), call: logged.call, want: func() want {
			w := released(freed)
			w.events = []eventWant{{kind: "released", owner: me, token: keptToken, actor: "svc", detail: map[string]any{}}}
			return w
		}()},
		{name: "held by the caller, an older token", state: heldBy(me), call: releaseArgs{owner: me, token: keptPrevious}.call, want: notHeld},
		{name: "held by another, its token", state: heldBy(other), call: mine.call, want: notHeld},
		{name: "held by the caller's owner, taken by another role: not held", state: heldBy(me).ofAnotherRole(),
			call: mine.call, want: notHeld},
		{name: "a slot of the caller's owner, taken by another role: not held", state: sharedBy(other, me).ofAnotherRole(),
			call: releaseArgs{owner: me, token: slotTok(2)}.call, want: notHeld},
		{name: "expired with a lock-delay, queued: released, the delay kept, handed to nobody",
			state: delayedAfterExpiry(me).queued(w1), call: mine.call, want: func() want {
				row := freed
				row.wakes, row.lockDelay = &span{0, time.Minute}, time.Minute
				w := released(row)
				w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
				return w
			}()},
		{name: "expired, the caller's own: released", state: lapsed(me), call: mine.call, want: func() want {
			row := freed
			return released(row)
		}()},
		{name: "held at least a period: released, kept until its at-least point, handed to nobody", state: heldAtLeast(me).queued(w1),
			call: mine.call, want: func() want {
				row := freed
				point := about(4 * time.Minute)
				row.wakes, row.delayUntil, row.keptUntil = &span{0, time.Minute}, &point, &point
				w := released(row)
				w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
				return w
			}()},
		{name: "queued: handed to the head", state: heldBy(me).queued(w1, w2), call: mine.call, want: func() want {
			w := released(handedTo(w1, "acquired", me))
			w.waiters, w.notify = waiters(w2), []notifyWant{handOffTo(w1, "acquired")}
			return w
		}()},
		{name: "queued, logged: the release and the waiter's grant", state: heldBy(me).withWaiter(loggingWaiter), call: logged.call, want: func() want {
			w := released(handedTo(w1, "acquired", me))
			w.events = []eventWant{
				{kind: "released", owner: me, token: keptToken, actor: "svc", detail: map[string]any{}},
				grantEvent("acquired", w1, "w1-svc", me),
			}
			w.notify = []notifyWant{handOffTo(w1, "acquired")}
			return w
		}()},
		{name: "queued, the head lapsed: handed to the next", state: heldBy(me).withWaiter(lapsedWaiter).queued(w2), call: mine.call, want: func() want {
			w := released(handedTo(w2, "acquired", me))
			w.waiters, w.notify = waiters(w1), []notifyWant{handOffTo(w2, "acquired")}
			return w
		}()},
		{name: "watched, nobody queued: a wake-up", state: heldBy(me).withWaiter(lapsedWaiter), call: mine.call, want: func() want {
			row := freed
			row.wakes = &span{0, time.Minute}
			w := released(row)
			w.waiters, w.notify = waiters(w1), []notifyWant{wakeUp}
			return w
		}()},
		{name: "a holder of two: its slot released, the group runs on", state: sharedBy(other, me), call: releaseArgs{owner: me, token: slotTok(2)}.call,
			want: want{outcome: "released", owner: me, token: slotTok(2), row: untouched,
				slots: []slotWant{asPrepared, slotReleasedNow(2, me)}}},
		{name: "a holder, logged", state: sharedBy(other, me), call: releaseArgs{owner: me, token: slotTok(2), logRelease: true, actor: "svc"}.call,
			want: want{outcome: "released", owner: me, token: slotTok(2), row: untouched,
				slots:  []slotWant{asPrepared, slotReleasedNow(2, me)},
				events: []eventWant{{kind: "released", owner: me, token: slotTok(2), actor: "svc", detail: map[string]any{}}}}},
		{name: "the last holder: the group ends", state: sharedBy(me).holding(lapsedSlot(other)), call: releaseArgs{owner: me, token: slotTok(1)}.call,
			want: want{outcome: "released", owner: me, token: slotTok(1), row: settled(0),
				slots: []slotWant{slotReleasedNow(1, me), slotReleasedNow(2, other)}}},
		{name: "the last permit, a writer queued: the group ends, handed to it", state: semaphoreOf(3, me).queued(w1, w2),
			call: releaseArgs{owner: me, token: slotTok(1)}.call, want: func() want {
				row := handedFromGroup(w1, 3)
				return want{outcome: "released", owner: me, token: slotTok(1), row: row, waiters: waiters(w2),
					slots: []slotWant{slotReleasedNow(1, me)}, notify: []notifyWant{handOffTo(w1, "acquired")}}
			}()},
		{name: "beside an upgrade at the head: the group ends for it, its lease with it", state: sharedBy(w1, me).withWaiter(upgradeWaiter(w1, 1)),
			call: releaseArgs{owner: me, token: slotTok(2)}.call,
			want: want{outcome: "released", owner: me, token: slotTok(2), row: handedFromGroup(w1, 0),
				slots:  []slotWant{slotReleasedNow(1, w1), slotReleasedNow(2, me)},
				events: []eventWant{upgradedEvent(w1, 1)}, notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "a holder's slot, another owner", state: sharedBy(other, me), call: releaseArgs{owner: me, token: slotTok(1)}.call, want: notHeld},
		{name: "a holder's slot, released already", state: sharedBy(other).holding(releasedSlot(me)),
			call: releaseArgs{owner: me, token: slotTok(2)}.call, want: notHeld},
		{name: "the group's token", state: sharedBy(other), call: releaseArgs{owner: groupOwner, token: keptToken}.call, want: notHeld},
		{name: "promised to the caller: given back, handed on", state: promisedTo(me).queued(w2), call: mine.call, want: func() want {
			w := released(handedTo(w2, "acquired", me))
			w.notify = []notifyWant{handOffTo(w2, "acquired")}
			return w
		}()},
	})
}
