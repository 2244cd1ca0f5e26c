package protocol_test

import (
	"testing"
	"time"
)

// The last expiry of a key's holders' unreleased leases, lapsed or not.
func TestHoldersEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_holders_end")
	call := ruleCall(`distributed_lock_holders_end(l.lock_key)`)
	f.run(t, []fnCase{
		{name: "the last of the live ones, a released slot's not counted",
			state: sharedBy().holding(holderRow{owner: w1, expiresIn: 20 * time.Second}, liveSlot(other),
				holderRow{owner: w2, expiresIn: 2 * time.Minute, freedAgo: time.Second}),
			call: call, want: leaseEndIs(2, false)},
		{name: "every holder lapsed: the last of them", state: sharedBy().holding(lapsedSlot(other)),
			call: call, want: leaseEndIs(1, false)},
		{name: "no holder: none", state: semaphoreOf(2), call: call, want: is(nil)},
		{name: "held alone: none", state: heldBy(other), call: call, want: is(nil)},
	})
}
