package protocol_test

import "testing"

func TestHeld(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_held")
	mine := ruleCall(`distributed_lock_held(l, $2, session_user, c.ts)`, me)
	f.run(t, []fnCase{
		{name: "held by the caller", state: heldBy(me), call: mine, want: is(true)},
		{name: "held by the caller's owner, taken by another role", state: heldBy(me).ofAnotherRole(), call: mine,
			want: is(false)},
		{name: "held by another", state: heldBy(other), call: mine, want: is(false)},
		{name: "expired, the caller's own", state: lapsed(me), call: mine, want: is(false)},
		{name: "free, the caller's last", state: free().with(func(r *lockRow) { r.owner = me }), call: mine, want: is(false)},
		{name: "promised to the caller", state: promisedTo(me), call: mine, want: is(true)},
		{name: "lapsed hand-off to the caller", state: lapsedHandOffTo(me), call: mine, want: is(false)},
		{name: "a group's own lease, as its reserved owner", state: sharedBy(me),
			call: ruleCall(`distributed_lock_held(l, '*', session_user, c.ts)`), want: want{value: true, row: untouched}},
		{name: "a holder's slot of the caller's", state: sharedBy(other, me),
			call: slotRuleCall(2, `distributed_lock_held(l, $3, session_user, c.ts)`, me), want: is(true)},
		{name: "a holder's slot of another's", state: sharedBy(other, me),
			call: slotRuleCall(1, `distributed_lock_held(l, $3, session_user, c.ts)`, me), want: is(false)},
		{name: "a lapsed slot of the caller's", state: sharedBy(other).holding(lapsedSlot(me)),
			call: slotRuleCall(2, `distributed_lock_held(l, $3, session_user, c.ts)`, me), want: is(false)},
	})
}
