package protocol_test

import (
	"testing"
	"time"
)

// holdArgs are distributed_lock_hold_at_least's arguments but the key and
// token; token says which token the call names.
type holdArgs struct {
	owner   string
	token   tok
	atLeast time.Duration
}

func (a holdArgs) call(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_hold_at_least(key => $1, owner => $2, token => $3, at_least_us => $4)`,
		[]any{key, a.owner, tokenArg(p, a.token), a.atLeast.Microseconds()}
}

// A holder marks its running lease to be kept at least a period from its
// grant: the at-least point is written as the row's kept_until and as its
// delay_until (which the rules read only after a release), nothing else
// changes. Anyone else's lease, a lease that ran out, was released or is a
// shared holder's is not held; a period out of a lease's bounds is refused.
func TestHoldAtLeast(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_hold_at_least")
	mine := holdArgs{owner: me, token: keptToken, atLeast: 5 * time.Minute}
	// heldBy's grant was made 10 s before the call (its TTL a minute, 50 s left).
	point := about(5*time.Minute - 10*time.Second)
	held := func(owner string) want {
		return want{outcome: "at_least", owner: owner, token: keptToken, row: rowWant{
			owner: owner, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
			prevOwner: "earlier", prevToken: keptPrevious, delayUntil: &point, keptUntil: &point}}
	}
	notHeld := want{outcome: "not_held", row: untouched}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: mine.call, want: notHeld},
		{name: "held by the caller", state: heldBy(me), call: mine.call, want: held(me)},
		{name: "held by the caller, a lock-delay: kept as well", state: heldWithDelay(me), call: mine.call,
			want: func() want { w := held(me); w.row.lockDelay = time.Minute; return w }()},
		{name: "held by the caller, a point already past: written all the same", state: heldBy(me),
			call: holdArgs{owner: me, token: keptToken, atLeast: time.Second}.call, want: func() want {
				w := held(me)
				past := span{-9*time.Second - slack, -9 * time.Second}
				w.row.delayUntil, w.row.keptUntil = &past, &past
				return w
			}()},
		{name: "held by the caller, an older token", state: heldBy(me),
			call: holdArgs{owner: me, token: keptPrevious, atLeast: time.Minute}.call, want: notHeld},
		{name: "held by another", state: heldBy(other), call: mine.call, want: notHeld},
		{name: "held by the caller's owner, taken by another role", state: heldBy(me).ofAnotherRole(), call: mine.call, want: notHeld},
		{name: "expired, the caller's own", state: lapsed(me), call: mine.call, want: notHeld},
		{name: "released by the caller", state: free().with(func(r *lockRow) { r.owner = me }), call: mine.call, want: notHeld},
		{name: "a shared holder's lease", state: sharedBy(me), call: holdArgs{owner: me, token: slotTok(1), atLeast: time.Minute}.call,
			want: notHeld},
		{name: "zero period", state: heldBy(me), call: holdArgs{owner: me, token: keptToken}.call, want: want{err: "23514"}},
		{name: "over a year", state: heldBy(me), call: holdArgs{owner: me, token: keptToken, atLeast: 366 * 24 * time.Hour}.call,
			want: want{err: "23514"}},
	})
}
