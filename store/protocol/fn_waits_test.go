package protocol_test

import (
	"testing"
	"time"
)

func waitsCall(_ string, p prepared) (string, []any) {
	return `SELECT distributed_lock_waits(w => w, ts => clock_timestamp()) AS result
		FROM distributed_lock_waiter w WHERE w.waiter_id = $1`, []any{p.waiter(me)}
}

func TestWaits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_waits")
	f.run(t, []fnCase{
		{name: "live, behind another's lease", state: heldBy(other).queued(me), call: waitsCall,
			want: want{row: untouched, waiters: waiters(me), value: true}},
		{name: "lapsed", state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: -time.Second}), call: waitsCall,
			want: want{row: untouched, waiters: waiters(me), value: false}},
		{name: "a set's record on another's lease", state: heldBy(other).queuedSet(me).and(also{name: "b", state: free().queuedSet(me)}),
			call: waitsCall, want: want{row: untouched, waiters: waiters(me), value: true}},
		{name: "a set's record on its owner's own lease", state: heldBy(me).queuedSet(me).and(also{name: "b", state: heldBy(other).queuedSet(me)}),
			call: waitsCall, want: want{row: untouched, waiters: waiters(me), value: false}},
	})
}
