package protocol_test

import "testing"

// releaseHolderArgs: whose slot, granted with which token, logged how.
type releaseHolderArgs struct {
	owner      string
	token      tok
	logRelease bool
}

// The slot it released (NULL: it did nothing, and the caller ends the
// lease under the row for update).
func (a releaseHolderArgs) call(key string, p prepared) (string, []any) {
	return `SELECT h.slot AS result FROM distributed_lock_release_holder(key => $1, owner => $2, token => $3,
		log_release => $4, event_actor => NULL) h`, []any{key, a.owner, tokenArg(p, a.token), a.logRelease}
}

// Beside the others only while releases hand off, and its permit goes to
// the next waiter of its kind or another lease keeps the group running.
func TestReleaseHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_release_holder")
	mine := releaseHolderArgs{owner: me, token: slotTok(2)}
	logged := releaseHolderArgs{owner: me, token: slotTok(2), logRelease: true}
	permitWaiters := semaphoreOf(2, other, me).withWaiter(permitWaiter(w1, 2)).withWaiter(permitWaiter(w2, 2))
	handedOn := func() want {
		return want{value: 2, row: untouched, waiters: []waiterWant{{owner: w2, mode: "semaphore", permits: 2}},
			slots:  []slotWant{asPrepared, slotHandedTo(w1, "acquired")},
			notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore")}}
	}
	undone := want{value: nil, row: untouched, waiters: waiters(w1, w2), slots: []slotWant{asPrepared, asPrepared}}
	f.run(t, []fnCase{
		{name: "one of two holders, permit waiters queued: released, its permit handed to the first",
			state: permitWaiters, call: mine.call, want: handedOn()},
		{name: "beside an enqueue holding the row for share", state: permitWaiters, call: mine.call,
			during: whileRowShared, want: handedOn()},
		{name: "logged: the release before the hand-off's grant", state: permitWaiters, call: logged.call,
			want: func() want {
				w := handedOn()
				w.events = []eventWant{{kind: "released", owner: me, token: slotTok(2), actor: me, detail: map[string]any{}}}
				return w
			}()},
		{name: "a writer queued first: released, the permit kept from the readers behind it",
			state: semaphoreOf(2, other, me).queued(w1).withWaiter(permitWaiter(w2, 2)), call: mine.call,
			want: want{value: 2, row: untouched, waiters: waiters(w1, w2), slots: []slotWant{asPrepared, slotReleasedNow(2, me)}}},
		{name: "the other holder's slot being renewed: handed on all the same", state: permitWaiters, call: mine.call,
			during: whileLocked(lockFirstSlotSQL, false), want: handedOn()},
		{name: "the last live holder, permit waiters queued: its permit and the lapsed one handed on",
			state: semaphoreOf(2, me).holding(lapsedSlot(other)).withWaiter(permitWaiter(w1, 2)).withWaiter(permitWaiter(w2, 2)),
			call:  releaseHolderArgs{owner: me, token: slotTok(1)}.call,
			want: want{value: 1, row: untouched,
				slots: []slotWant{slotHandedTo(w1, "acquired"), slotHandedTo(w2, "stolen")},
				events: []eventWant{func() eventWant {
					e := holderGrantEvent("stolen", w2, "semaphore", 2, 2)
					e.prevOwner, e.prevToken = other, slotTok(2) // the lapsed lease it took over
					return e
				}()},
				notify: []notifyWant{slotHandOffTo(w1, "acquired", "semaphore"), slotHandOffTo(w2, "stolen", "semaphore")}}},
		{name: "handed to nobody, the other holder's slot being renewed: undone",
			state: semaphoreOf(2, other, me).queued(w1).withWaiter(permitWaiter(w2, 2)), call: mine.call,
			during: whileLocked(lockFirstSlotSQL, false),
			want:   want{value: nil, row: untouched, waiters: waiters(w1, w2), slots: []slotWant{asPrepared, asPrepared}}},
		{name: "nobody ever waited (no hand-offs): undone", state: semaphoreOf(2, other, me), call: mine.call,
			want: want{value: nil, row: untouched, slots: []slotWant{asPrepared, asPrepared}}},
		{name: "another owner's slot", state: permitWaiters, call: releaseHolderArgs{owner: me, token: slotTok(1)}.call, want: undone},
		{name: "an exclusive lease", state: heldBy(me).queued(w1), call: releaseHolderArgs{owner: me, token: keptToken}.call,
			want: isQueued(nil, w1)},
	})
}
