package protocol_test

import "testing"

func handOffSetCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS result FROM (SELECT distributed_lock_hand_off_set(ks => ARRAY[$1::text], ts => clock_timestamp())) c`,
		[]any{key}
}

// A free key of the set goes to the head of its queue; a held one stays.
func TestHandOffSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_hand_off_set")
	f.run(t, []fnCase{
		{name: "free, queued: handed to the head", state: free().queued(w1, w2), call: handOffSetCall, want: want{
			value: true, row: handedTo(w1, "acquired", other), waiters: waiters(w2),
			notify: []notifyWant{handOffTo(w1, "acquired")}}},
		{name: "held, queued: kept", state: heldBy(other).queued(w1), call: handOffSetCall, want: want{
			value: true, row: untouched, waiters: waiters(w1)}},
	})
}
