package protocol_test

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// The protocol's clock is the server's, read as the call runs (c.ts is
// the server's clock read just before). A schema whose clock a test moved
// reads the moved time, and so does every rule judged with it.
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

	moved := newIsolatedFixture(t, "distributed_lock_now")
	testdb.Clock(t, moved.db).Advance(time.Hour)
	moved.run(t, []fnCase{
		{name: "moved an hour on, it reads an hour on", state: heldBy(other),
			call: ruleCall(`distributed_lock_now() - clock_timestamp() BETWEEN interval '59 minutes' AND interval '61 minutes'`),
			want: is(true)},
		{name: "moved an hour on, a lease with 50 s left on the server's clock has lapsed by it", state: heldBy(other),
			call: ruleCall(`distributed_lock_open(l, distributed_lock_now())`), want: is(true)},
	})
}
