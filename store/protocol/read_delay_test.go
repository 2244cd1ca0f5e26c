package protocol_test

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/store"
)

// The readers' delay_until (store.DelayUntilColumn, for roles that may not
// execute the rules) is the rules' answer, in every state.
func TestReadDelayIsTheRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "store.DelayUntilColumn")
	same := ruleCall(`(` + store.DelayUntilColumn + `) IS NOT DISTINCT FROM
		CASE WHEN distributed_lock_delayed(l, c.ts) THEN distributed_lock_delay_end(l) END`)
	f.run(t, []fnCase{
		{name: "held", state: heldBy(other), call: same, want: is(true)},
		{name: "held with a lock-delay", state: heldWithDelay(other), call: same, want: is(true)},
		{name: "free", state: free(), call: same, want: is(true)},
		{name: "expired", state: lapsed(other), call: same, want: is(true)},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: same, want: is(true)},
		{name: "expired, its lock-delay over", state: delayOver(other), call: same, want: is(true)},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: same, want: is(true)},
		{name: "released after it ran out, in its lock-delay", state: releasedLate(other), call: same, want: is(true)},
		{name: "force-released, its lock-delay over", state: delayedAfterRelease(other).with(func(r *lockRow) { r.delayFor = -time.Second }),
			call: same, want: is(true)},
		{name: "released cleanly, with a lock-delay", state: free().with(func(r *lockRow) { r.lockDelay = time.Minute }), call: same, want: is(true)},
	})
}
