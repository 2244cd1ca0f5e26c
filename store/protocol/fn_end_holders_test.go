package protocol_test

import "testing"

// endHoldersArgs: whose slots end ("": any owner's), granted with which
// token, and how ("release" or "expire"), at the caller's now.
type endHoldersArgs struct {
	owner string
	token tok
	how   string
}

// The slots it ended, counted (the function returns one row each).
func (a endHoldersArgs) call(key string, p prepared) (string, []any) {
	return `SELECT count(*) AS result
		FROM distributed_lock_end_holders(key => $1, owner => $2, token => $3, how => $4, ts => distributed_lock_now()) e`,
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
		// The group's end and its hand-off come after the caller logs the
		// ends (distributed_lock_holders_ended), not here.
		{name: "release, the last holder: the group stands, for the caller to end", state: sharedBy(me).holding(lapsedSlot(other)),
			call: release(me, slotTok(1)).call, want: ended(1, untouched, slotReleasedNow(1, me), asPrepared)},
		{name: "release, the last permit, a writer queued: nothing handed yet", state: semaphoreOf(2, me).queued(w1),
			call: release(me, slotTok(1)).call, want: func() want {
				w := ended(1, untouched, slotReleasedNow(1, me))
				w.waiters = waiters(w1)
				return w
			}()},
		{name: "release of the caller's lapsed slot: released", state: semaphoreOf(2, other).holding(lapsedSlot(me)),
			call: release(me, slotTok(2)).call, want: ended(1, untouched, asPrepared, slotReleasedNow(2, me))},
		{name: "expire one holder: its lease ends now", state: sharedBy(other, w1), call: expire(slotTok(1)).call,
			want: ended(1, untouched, slotExpiredNow(1, other), asPrepared)},
		{name: "expire every holder, by the group's token", state: sharedBy(other, w1).holding(releasedSlot(w2)),
			call: expire(keptToken).call,
			want: ended(2, untouched, slotExpiredNow(1, other), slotExpiredNow(2, w1), asPrepared)},
		{name: "expire a lapsed slot: nothing ended", state: semaphoreOf(2, other).holding(lapsedSlot(w1)), call: expire(slotTok(2)).call,
			want: ended(0, untouched)},
		{name: "release, another's token", state: sharedBy(other, me), call: release(me, slotTok(1)).call, want: ended(0, untouched)},
		{name: "release, the group's token: no holder's", state: sharedBy(me), call: release(me, keptToken).call, want: ended(0, untouched)},
		{name: "an exclusive lease's token", state: heldBy(me), call: release(me, keptToken).call, want: ended(0, untouched)},
		{name: "another's token, every holder lapsed: nothing ended", state: sharedBy().holding(lapsedSlot(other)),
			call: release(me, slotTok(1)).call, want: ended(0, untouched)},
		{name: "no row", state: noRow(), call: release(me, keptToken).call, want: ended(0, untouched)},
	})
}
