package protocol_test

import (
	"testing"
	"time"
)

// leaseEndIs: the rule answers the expiry of the n-th slot (from 1), or,
// for n 0, the row's acquired_at (acquired) or expires_at.
func leaseEndIs(n int, acquired bool) want {
	w := want{row: untouched}
	w.check = func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		var end time.Time
		switch {
		case n > 0:
			end = after.slots[n-1].ExpiresAt
		case acquired:
			end = after.row.AcquiredAt
		default:
			end = after.row.ExpiresAt
		}
		if got, ok := result["result"].(time.Time); !ok || !got.Equal(end) {
			t.Errorf("lease end %v; want %v", result["result"], end)
		}
	}
	return w
}

// A running group's lease ends with its last holder's, never at the
// group's far-future end; any other row's at its expires_at.
func TestLeaseEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_lease_end")
	call := ruleCall(`distributed_lock_lease_end(l)`)
	f.run(t, []fnCase{
		{name: "a running group: its holders' last expiry, a released slot's not counted",
			state: sharedBy().holding(holderRow{owner: w1, expiresIn: 20 * time.Second}, liveSlot(other),
				holderRow{owner: w2, expiresIn: 2 * time.Minute, freedAgo: time.Second}),
			call: call, want: leaseEndIs(2, false)},
		{name: "a running group, its holders lapsed: the last of them", state: sharedBy().holding(lapsedSlot(other)),
			call: call, want: leaseEndIs(1, false)},
		{name: "a running group without holders: its start", state: semaphoreOf(2), call: call, want: leaseEndIs(0, true)},
		{name: "an ended group: its expires_at", state: groupEnded(2), call: call, want: leaseEndIs(0, false)},
		{name: "an exclusive lease: its expires_at", state: heldBy(other), call: call, want: leaseEndIs(0, false)},
	})
}
