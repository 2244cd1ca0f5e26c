package protocol_test

import "testing"

// The owner calls the internal function directly, for waiter w1's record.
func claimWaiterCall(_ string, p prepared) (string, []any) {
	return `SELECT distributed_lock_claim_waiter(id => $1) AS result`, []any{p.waiter(w1)}
}

// A record is claimed once: a second release passes over the one another
// serves, but not one that is only locked (its heartbeat refreshing it).
func TestClaimWaiter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_claim_waiter")
	queued := semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2))
	f.run(t, []fnCase{
		{name: "nobody serves it", state: queued, call: claimWaiterCall, want: isQueued(true, w1)},
		{name: "another release serves it", state: queued, call: claimWaiterCall,
			during: whileLocked(claimFirstWaiterSQL, false), want: isQueued(false, w1)},
		{name: "locked by its heartbeat, claimed by nobody", state: queued, call: claimWaiterCall,
			during: whileLocked(lockFirstWaiterSQL, false), want: isQueued(true, w1)},
	})
}
