package protocol_test

import "testing"

// The protocol's clock is the server's, read as the call runs (c.ts is
// the server's clock read just before).
func TestNow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_now")
	f.run(t, []fnCase{
		{name: "the server's clock, as the call runs", state: heldBy(other),
			call: ruleCall(`c.ts <= distributed_lock_now() AND distributed_lock_now() <= clock_timestamp()`),
			want: is(true)},
		{name: "a running lease runs by it", state: heldBy(other),
			call: ruleCall(`NOT distributed_lock_open(l, distributed_lock_now())`), want: is(true)},
	})
}
