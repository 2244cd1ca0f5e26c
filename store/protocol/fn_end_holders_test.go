package protocol_test

import "testing"

// endHoldersArgs: whose slots end ("": any owner's), granted with which
// token, and how ("release" or "expire").
type endHoldersArgs struct {
	owner string
	token tok
	how   string
}

// The slots it ended, counted (the function returns one row each).
func (a endHoldersArgs) call(key string, p prepared) (string, []any) {
	return `SELECT count(*) AS result FROM distributed_lock_end_holders(key => $1, owner => $2, token => $3, how => $4) e`,
		[]any{key, null(a.owner), tokenArg(p, a.token), a.how}
}

func TestEndHolders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_end_holders")
	release := func(owner string, token tok) endHoldersArgs {
		return endHoldersArgs{owner: owner, token: token, how: "release"}
	}
	expire := func(token tok) endHoldersArgs { return endHoldersArgs{token: token, how: "expire"} }
	ended := func(n int, row rowWant, slots ...slotWant) want { return want{value: n, row: row, slots: slots} }
	f.run(t, []fnCase{
		{name: "release, one of two holders: the group runs on", state: sharedBy(other, me), call: release(me, slotTok(2)).call,
			want: ended(1, untouched, asPrepared, slotReleasedNow(2, me))},
		{name: "release, the last holder: the group ends", state: sharedBy(me).holding(lapsedSlot(other)), call: release(me, slotTok(1)).call,
			want: ended(1, settled(0), slotReleasedNow(1, me), asPrepared)},
		{name: "release, the last permit, a writer queued: handed to it", state: semaphoreOf(2, me).queued(w1),
			call: release(me, slotTok(1)).call, want: func() want {
				row := handedFromGroup(w1, 2)
				w := ended(1, row, slotReleasedNow(1, me))
				w.notify = []notifyWant{handOffTo(w1, "acquired")}
				return w
			}()},
		{name: "release of the caller's lapsed slot: released", state: semaphoreOf(2, other).holding(lapsedSlot(me)),
			call: release(me, slotTok(2)).call, want: ended(1, untouched, asPrepared, slotReleasedNow(2, me))},
		{name: "expire one holder: its lease ends now", state: sharedBy(other, w1), call: expire(slotTok(1)).call,
			want: ended(1, untouched, slotExpiredNow(1, other), asPrepared)},
		{name: "expire every holder, by the group's token: the group ends", state: sharedBy(other, w1).holding(releasedSlot(w2)),
			call: expire(keptToken).call,
			want: ended(2, settled(0), slotExpiredNow(1, other), slotExpiredNow(2, w1), asPrepared)},
		{name: "expire a lapsed slot: nothing ended", state: semaphoreOf(2, other).holding(lapsedSlot(w1)), call: expire(slotTok(2)).call,
			want: ended(0, untouched)},
		{name: "release, another's token", state: sharedBy(other, me), call: release(me, slotTok(1)).call, want: ended(0, untouched)},
		{name: "release, the group's token: no holder's", state: sharedBy(me), call: release(me, keptToken).call, want: ended(0, untouched)},
		{name: "an exclusive lease's token", state: heldBy(me), call: release(me, keptToken).call, want: ended(0, untouched)},
		{name: "another's token, every holder lapsed: the group is ended all the same", state: sharedBy().holding(lapsedSlot(other)),
			call: release(me, slotTok(1)).call, want: ended(0, settled(0))},
		{name: "no row", state: noRow(), call: release(me, keptToken).call, want: ended(0, untouched)},
	})
}
