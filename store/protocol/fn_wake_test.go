package protocol_test

import (
	"testing"
	"time"
)

func wakeCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS returned FROM distributed_lock_wake(key => $1)`, []any{key}
}

// A wake-up reaches the processes whose records wait for the key, each
// once, and no other.
func TestWake(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_wake")
	f.run(t, []fnCase{
		{name: "nobody queued: nothing sent", state: free().waking(), call: wakeCall, want: want{row: untouched}},
		{name: "a waiter without a wake channel: the shared wake-up", state: heldBy(other).queued(w1), call: wakeCall,
			want: want{row: untouched, waiters: waiters(w1), notify: []notifyWant{wakeUp}}},
		{name: "waiters on two channels and one on none: each channel once, the shared one last",
			state: heldBy(other).queuedOn(chanB, w1).queuedOn(chanA, w2).queued(me).queuedOn(chanB, other), call: wakeCall,
			want: want{row: untouched,
				waiters: []waiterWant{{owner: w1, channel: chanB}, {owner: w2, channel: chanA}, {owner: me}, {owner: other, channel: chanB}},
				notify:  []notifyWant{wakeUp.on(chanA), wakeUp.on(chanB), wakeUp}}},
		{name: "a lapsed waiter's channel: woken, to learn its place is gone",
			state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second, channel: chanC}), call: wakeCall,
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanC}}, notify: []notifyWant{wakeUp.on(chanC)}}},
	})
}
