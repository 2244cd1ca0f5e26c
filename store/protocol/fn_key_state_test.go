package protocol_test

import (
	"testing"
	"time"
)

// A key's state as readers show it, in every state, a shared key's by its
// holders' leases.
func TestKeyState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_key_state")
	state := ruleCall(`distributed_lock_key_state(l, c.ts)`)
	f.run(t, []fnCase{
		{name: "held", state: heldBy(other), call: state, want: is("held")},
		{name: "held, a fifth of its TTL left", state: heldBy(other).with(func(r *lockRow) { r.expiresIn = 5 * time.Second }),
			call: state, want: is("expiring")},
		{name: "held, a fifth of a long TTL left: 10 s or more is not expiring",
			state: heldBy(other).with(func(r *lockRow) { r.expiresIn, r.ttl = 11*time.Second, time.Hour }), call: state,
			want: is("held")},
		{name: "free", state: free(), call: state, want: is("free")},
		{name: "expired", state: lapsed(other), call: state, want: is("expired")},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: state, want: is("delayed")},
		{name: "expired, its lock-delay over", state: delayOver(other), call: state, want: is("expired")},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: state, want: is("delayed")},
		{name: "held at least a period", state: heldAtLeast(other), call: state, want: is("held")},
		{name: "released before its at-least point", state: keptBy(other), call: state, want: is("kept")},
		{name: "released, its at-least point past", state: keptBy(other).with(func(r *lockRow) { r.delayFor, r.keptFor = -time.Second, -time.Second }),
			call: state, want: is("free")},
		{name: "released after it ran out, at least a period asked: its lock-delay", call: state, want: is("delayed"),
			state: releasedLate(other).with(func(r *lockRow) { r.delayFor, r.keptFor = 4*time.Minute, 4*time.Minute })},
		{name: "released after it ran out, in its lock-delay", state: releasedLate(other), call: state, want: is("delayed")},
		{name: "released cleanly, with a lock-delay", state: free().with(func(r *lockRow) { r.lockDelay = time.Minute }),
			call: state, want: is("free")},
		{name: "shared by two", state: sharedBy(other, w1), call: state, want: is("held")},
		{name: "shared, its holders' leases ran out", state: sharedBy().holding(lapsedSlot(other), lapsedSlot(w1)),
			call: state, want: is("expired")},
		{name: "a semaphore, one holder lapsed, one live", state: semaphoreOf(2, other).holding(lapsedSlot(w1)),
			call: state, want: is("held")},
		{name: "a group that ended", state: groupEnded(2), call: state, want: is("free")},
	})
}
