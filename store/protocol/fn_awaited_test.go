package protocol_test

import (
	"testing"
	"time"
)

func awaitedCall(_ string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_awaited(owner => $1, ts => clock_timestamp()) AS result`, []any{me}
}

// Someone waits for an owner when a live waiting record of another owner is
// on a key it holds, or behind a live record of its own: only then can a
// cycle of waits run through it.
func TestAwaited(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_awaited")
	f.run(t, []fnCase{
		{name: "holding a key nobody waits for", state: heldBy(me), call: awaitedCall,
			want: want{row: untouched, value: false}},
		{name: "holding a key another waits for", state: heldBy(me).queued(w1), call: awaitedCall,
			want: want{row: untouched, waiters: waiters(w1), value: true}},
		{name: "its holder's lease lapsed", state: lapsed(me).queued(w1), call: awaitedCall,
			want: want{row: untouched, waiters: waiters(w1), value: false}},
		{name: "holding a key whose waiter's record lapsed", call: awaitedCall,
			state: heldBy(me).withWaiter(waiterRow{owner: w1, seenFor: -time.Second}),
			want:  want{row: untouched, waiters: waiters(w1), value: false}},
		{name: "queued at the tail: nobody behind", state: heldBy(other).queued(w1, me), call: awaitedCall,
			want: want{row: untouched, waiters: waiters(w1, me), value: false}},
		{name: "queued with another behind", state: heldBy(other).queued(me, w1), call: awaitedCall,
			want: want{row: untouched, waiters: waiters(me, w1), value: true}},
		{name: "its own record lapsed, another behind", call: awaitedCall,
			state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: -time.Second}).queued(w1),
			want:  want{row: untouched, waiters: waiters(me, w1), value: false}},
	})
}
