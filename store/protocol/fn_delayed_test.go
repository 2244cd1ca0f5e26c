package protocol_test

import (
	"testing"
	"time"
)

// A key is delayed while nobody holds it and its last lease's lock-delay
// has not ended.
func TestDelayed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_delayed")
	delayed := ruleCall(`distributed_lock_delayed(l, c.ts)`)
	f.run(t, []fnCase{
		{name: "held with a lock-delay", state: heldWithDelay(other), call: delayed, want: is(false)},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: delayed, want: is(true)},
		{name: "expired, in its lock-delay, queued", state: delayedAfterExpiry(other).queued(w1), call: delayed, want: isQueued(true, w1)},
		{name: "expired, its lock-delay over", state: delayOver(other), call: delayed, want: is(false)},
		{name: "expired, no lock-delay", state: lapsed(other), call: delayed, want: is(false)},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: delayed, want: is(true)},
		{name: "released after it ran out, in its lock-delay", state: releasedLate(other), call: delayed, want: is(true)},
		{name: "force-released, its lock-delay over", state: delayedAfterRelease(other).with(func(r *lockRow) { r.delayFor = -time.Second }),
			call: delayed, want: is(false)},
		{name: "released cleanly, with a lock-delay", state: free().with(func(r *lockRow) { r.lockDelay = time.Minute }), call: delayed, want: is(false)},
		{name: "held at least a period", state: heldAtLeast(other), call: delayed, want: is(false)},
		{name: "released before its at-least point", state: keptBy(other), call: delayed, want: is(true)},
		{name: "held at least a period, ran out unreleased", state: heldAtLeast(other).with(func(r *lockRow) { r.expiresIn = -time.Second }),
			call: delayed, want: is(false)},
	})
}
