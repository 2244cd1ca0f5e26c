package protocol_test

import (
	"testing"
	"time"
)

// renewArgs are distributed_lock_renew's arguments but the key and token;
// token says which token the call names.
type renewArgs struct {
	owner string
	token tok
	ttl   time.Duration
}

func (a renewArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_renew(key => $1, owner => $2, token => $3, ttl_us => $4)`,
		[]any{key, a.owner, tokenArg(p, a.token), a.ttl.Microseconds()}
}

// tokenArg is the token a call names: the prepared row's, its previous one
// (an older grant's), a holder's (slotTok), or, with no row, any.
func tokenArg(p prepared, which tok) int64 {
	switch {
	case which == keptPrevious:
		return p.previousToken
	case which >= slotToken:
		return p.slots[which-slotToken]
	case p.token == 0:
		return 1
	}
	return p.token
}

func TestRenew(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_renew")
	mine := renewArgs{owner: me, token: keptToken, ttl: 2 * time.Minute}
	renewed := func(owner string) want {
		return want{outcome: "renewed", owner: owner, token: keptToken, row: rowWant{
			owner: owner, token: keptToken, expires: about(2 * time.Minute), ttl: 2 * time.Minute,
			kind: "acquired", prevOwner: "earlier", prevToken: keptPrevious, renewals: 1}}
	}
	notHeld := want{outcome: "not_held", row: untouched}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: mine.call, want: notHeld},
		{name: "free", state: free().with(func(r *lockRow) { r.owner = me }), call: mine.call, want: notHeld},
		{name: "held by the caller, not revoked: told of none", state: heldBy(me), call: mine.call, want: func() want {
			w := renewed(me)
			w.check = toldOf("", false)
			return w
		}()},
		{name: "held by the caller, an older token", state: heldBy(me), call: renewArgs{owner: me, token: keptPrevious, ttl: time.Minute}.call, want: notHeld},
		{name: "held by another, its token", state: heldBy(other), call: mine.call, want: notHeld},
		{name: "held by the caller's owner, taken by another role: not held", state: heldBy(me).ofAnotherRole(),
			call: mine.call, want: notHeld},
		{name: "expired, the caller's own: not revived", state: lapsed(me), call: mine.call, want: notHeld},
		{name: "held by the caller, queued: waiters do not stop a renewal", state: heldBy(me).queued(w1), call: mine.call, want: func() want {
			w := renewed(me)
			w.row.wakes = &span{0, time.Minute}
			w.waiters = waiters(w1)
			return w
		}()},
		{name: "promised to the caller: the claim", state: promisedTo(me).queued(w2), call: mine.call, want: func() want {
			w := renewed(me)
			w.row.handedTo, w.row.wakes, w.waiters = me, &span{0, time.Minute}, waiters(w2)
			return w
		}()},
		{name: "lapsed hand-off to the caller", state: lapsedHandOffTo(me), call: mine.call, want: notHeld},
		{name: "revoked with a deadline: renewed up to it, no further, and told", state: heldBy(me).revoked(revokeRow{reason: "drain", forceIn: deadlineIn(20 * time.Second)}),
			call: mine.call, want: func() want {
				w := renewed(me)
				w.row.expires = about(20 * time.Second)
				w.check = toldOf("drain", true)
				return w
			}()},
		{name: "revoked without a deadline: renewed as usual, and told", state: heldBy(me).revoked(revokeRow{reason: "drain"}), call: mine.call, want: func() want {
			w := renewed(me)
			w.check = toldOf("drain", false)
			return w
		}()},
		{name: "another role's lease, revoked: not told", state: heldBy(me).ofAnotherRole().revoked(revokeRow{reason: "drain"}), call: mine.call,
			want: notHeld},

		{name: "a holder's slot, its token: renewed", state: sharedBy(other, me), call: renewArgs{owner: me, token: slotTok(2), ttl: 2 * time.Minute}.call,
			want: want{outcome: "renewed", owner: me, token: slotTok(2), row: untouched,
				slots: []slotWant{asPrepared, slotRenewed(2, me, 2*time.Minute)}}},
		{name: "a permit, its token, a writer queued: renewed", state: semaphoreOf(2, me).queued(w1),
			call: renewArgs{owner: me, token: slotTok(1), ttl: 2 * time.Minute}.call,
			want: want{outcome: "renewed", owner: me, token: slotTok(1), row: untouched, waiters: waiters(w1),
				slots: []slotWant{slotRenewed(1, me, 2*time.Minute)}}},
		{name: "a holder's slot, another owner", state: sharedBy(other, me), call: renewArgs{owner: me, token: slotTok(1), ttl: time.Minute}.call,
			want: notHeld},
		{name: "a holder's slot, lapsed: not revived", state: sharedBy(other).holding(lapsedSlot(me)),
			call: renewArgs{owner: me, token: slotTok(2), ttl: time.Minute}.call, want: notHeld},
		{name: "a holder's slot, released", state: sharedBy(other).holding(releasedSlot(me)),
			call: renewArgs{owner: me, token: slotTok(2), ttl: time.Minute}.call, want: notHeld},
		{name: "the group's token", state: sharedBy(me), call: renewArgs{owner: groupOwner, token: keptToken, ttl: time.Minute}.call,
			want: notHeld},
		{name: "zero TTL, a holder's slot", state: sharedBy(me), call: renewArgs{owner: me, token: slotTok(1)}.call, want: want{err: "23514"}},

		{name: "zero TTL", state: heldBy(me), call: renewArgs{owner: me, token: keptToken}.call, want: want{err: "23514"}},
		{name: "negative TTL", state: heldBy(me), call: renewArgs{owner: me, token: keptToken, ttl: -time.Second}.call, want: want{err: "23514"}},
	})
}
