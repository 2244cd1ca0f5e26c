package protocol_test

import "testing"

// fenceHolderArgs: who fences, naming the token of the state's n-th holder
// (0: the prepared row's).
type fenceHolderArgs struct {
	owner string
	slot  int
}

func (a fenceHolderArgs) call(key string, p prepared) (string, []any) {
	token := p.token
	if a.slot > 0 {
		token = p.slots[a.slot-1]
	}
	return `SELECT distributed_lock_fence_holder(key => $1, owner => $2, token => $3) AS result`, []any{key, a.owner, token}
}

// A holder's fence writes nothing, whatever it answers.
func TestFenceHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_fence_holder")
	f.run(t, []fnCase{
		{name: "the caller's slot", state: sharedBy(other, me), call: fenceHolderArgs{owner: me, slot: 2}.call, want: is(true)},
		{name: "another's slot, its token", state: sharedBy(other, me), call: fenceHolderArgs{owner: me, slot: 1}.call, want: is(false)},
		{name: "the caller's slot, lapsed", state: semaphoreOf(2, other).holding(lapsedSlot(me)),
			call: fenceHolderArgs{owner: me, slot: 2}.call, want: is(false)},
		{name: "the caller's slot, released", state: semaphoreOf(2, other).holding(releasedSlot(me)),
			call: fenceHolderArgs{owner: me, slot: 2}.call, want: is(false)},
		{name: "the group's token", state: sharedBy(other), call: fenceHolderArgs{owner: groupOwner}.call, want: is(false)},
		{name: "an exclusive lease's token", state: heldBy(me), call: fenceHolderArgs{owner: me}.call, want: is(false)},
	})
}
