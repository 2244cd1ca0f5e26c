package protocol_test

import (
	"testing"
	"time"
)

// A key is kept while a release made before its hold's at-least point
// keeps it until then: not while the lease runs, not once the point is
// past, not when the delay it is in is another's (a lease that ran out, a
// force-release's).
func TestKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_kept")
	kept := ruleCall(`distributed_lock_kept(l, c.ts)`)
	f.run(t, []fnCase{
		{name: "free", state: free(), call: kept, want: is(false)},
		{name: "held at least a period", state: heldAtLeast(other), call: kept, want: is(false)},
		{name: "released before its at-least point", state: keptBy(other), call: kept, want: is(true)},
		{name: "released before its at-least point, queued", state: keptBy(other).queued(w1), call: kept, want: isQueued(true, w1)},
		{name: "released, its at-least point past", state: keptBy(other).with(func(r *lockRow) { r.delayFor, r.keptFor = -time.Second, -time.Second }),
			call: kept, want: is(false)},
		{name: "ran out unreleased, in its lock-delay", call: kept, want: is(false),
			state: delayedAfterExpiry(other).with(func(r *lockRow) { r.delayFor, r.keptFor = 4*time.Minute, 4*time.Minute })},
		{name: "released after it ran out", call: kept, want: is(false),
			state: releasedLate(other).with(func(r *lockRow) { r.delayFor, r.keptFor = 4*time.Minute, 4*time.Minute })},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: kept, want: is(false)},
	})
}
