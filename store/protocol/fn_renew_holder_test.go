package protocol_test

import (
	"testing"
	"time"
)

// renewHolderArgs: who renews, naming the token of the state's n-th holder
// (0: the prepared row's).
type renewHolderArgs struct {
	owner string
	slot  int
}

func (a renewHolderArgs) call(key string, p prepared) (string, []any) {
	token := p.token
	if a.slot > 0 {
		token = p.slots[a.slot-1]
	}
	return `SELECT * FROM distributed_lock_renew_holder(key => $1, owner => $2, token => $3, ttl_us => $4)`,
		[]any{key, a.owner, token, (2 * time.Minute).Microseconds()}
}

// A holder's slot is renewed by its owner and token while its lease runs;
// otherwise nothing changes and every column is NULL.
func TestRenewHolder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_renew_holder")
	none := want{nullKey: true, row: untouched}
	f.run(t, []fnCase{
		{name: "the caller's slot", state: sharedBy(other, me), call: renewHolderArgs{owner: me, slot: 2}.call, want: want{
			owner: me, token: slotTok(2), row: untouched, slots: []slotWant{asPrepared, slotRenewed(2, me, 2*time.Minute)}}},
		{name: "another's slot, its token", state: sharedBy(other, me), call: renewHolderArgs{owner: me, slot: 1}.call, want: none},
		{name: "the caller's slot, lapsed: not revived", state: semaphoreOf(2, other).holding(lapsedSlot(me)),
			call: renewHolderArgs{owner: me, slot: 2}.call, want: none},
		{name: "the caller's slot, released", state: semaphoreOf(2, other).holding(releasedSlot(me)),
			call: renewHolderArgs{owner: me, slot: 2}.call, want: none},
		{name: "an exclusive lease's token", state: heldBy(me), call: renewHolderArgs{owner: me}.call, want: none},
	})
}
