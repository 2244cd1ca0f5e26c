package protocol_test

import (
	"testing"
	"time"
)

// The caller has freed the key's row at ts (the states are free rows).
func passOnCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS returned FROM distributed_lock_pass_on(key => $1, ts => clock_timestamp())`, []any{key}
}

func TestPassOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_pass_on")
	f.run(t, []fnCase{
		{name: "queued: handed to the head", state: free().queued(w1, w2), call: passOnCall, want: want{
			row: handedTo(w1, "acquired", other), waiters: waiters(w2), notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "its only waiter lapsed: a wake-up", state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second}), call: passOnCall, want: want{
			row: untouched, waiters: waiters(w1), notify: []notifyWant{wakeUp}}},
		{name: "its only waiter lapsed, on a wake channel: woken there", state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second, channel: chanA}),
			call: passOnCall, want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanA}}, notify: []notifyWant{wakeUp.on(chanA)}}},
		{name: "queued on wake channels: handed to the head on its channel, the next one told", state: free().queuedOn(chanA, w1).queuedOn(chanB, w2),
			call: passOnCall, want: want{row: handedTo(w1, "acquired", other), waiters: []waiterWant{{owner: w2, channel: chanB}},
				notify: []notifyWant{handOffTo(w1, "acquired").on(chanA), handOffTo(w1, "acquired").on(chanB)}}},
		{name: "watched, nobody queued: nobody to wake", state: free().waking(), call: passOnCall, want: want{row: untouched}},
	})
}
