package protocol_test

import "testing"

// An exclusive lease may be granted when nobody holds the key, its
// lock-delay is over, and it is not promised to the waiters queued for it;
// who asks does not matter. A shared lease or a permit may also join a
// running group of its kind while nobody is queued ahead. A hand-off to a
// waiter record is refused only by waiters ahead of that record.
func TestAdmits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_admits")
	grant := ruleCall(`distributed_lock_admits(l, 'exclusive', NULL, NULL, c.ts)`)
	shared := ruleCall(`distributed_lock_admits(l, 'shared', NULL, NULL, c.ts)`)
	permits := func(n int) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_admits(l, 'semaphore', $2::integer, NULL, c.ts)`, n)
	}
	handOff := func(to string) func(string, prepared) (string, []any) {
		return func(key string, p prepared) (string, []any) {
			return ruleCall(`distributed_lock_admits(l, 'exclusive', NULL, $2::bigint, c.ts)`, p.waiter(to))(key, p)
		}
	}
	f.run(t, []fnCase{
		{name: "free", state: free(), call: grant, want: is(true)},
		{name: "expired", state: lapsed(other), call: grant, want: is(true)},
		{name: "held", state: heldBy(other), call: grant, want: is(false)},
		{name: "free, queued", state: free().queued(w1), call: grant, want: isQueued(false, w1)},
		{name: "expired, queued", state: lapsed(other).queued(w1), call: grant, want: isQueued(false, w1)},
		{name: "held, queued", state: heldBy(other).queued(w1), call: grant, want: isQueued(false, w1)},
		{name: "promised to a waiter", state: promisedTo(w1), call: grant, want: is(false)},
		{name: "lapsed hand-off, nobody queued", state: lapsedHandOffTo(w1), call: grant, want: is(true)},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: grant, want: is(false)},
		{name: "expired, its lock-delay over", state: delayOver(other), call: grant, want: is(true)},
		{name: "force-released, in its lock-delay", state: delayedAfterRelease(other), call: grant, want: is(false)},
		{name: "lapsed hand-off, queued", state: lapsedHandOffTo(w1).queued(w2), call: grant, want: isQueued(false, w2)},

		{name: "free, queued: handed to the head", state: free().queued(w1, w2), call: handOff(w1), want: isQueued(true, w1, w2)},
		{name: "free, queued: not to the second", state: free().queued(w1, w2), call: handOff(w2), want: isQueued(false, w1, w2)},
		{name: "in its lock-delay: not even to the head", state: delayedAfterExpiry(other).queued(w1), call: handOff(w1),
			want: isQueued(false, w1)},
		{name: "held: not to the head", state: heldBy(other).queued(w1), call: handOff(w1), want: isQueued(false, w1)},

		{name: "a running shared group: joined", state: sharedBy(other), call: shared, want: is(true)},
		{name: "a running shared group, a writer queued: not overtaken", state: sharedBy(other).queued(w1), call: shared,
			want: isQueued(false, w1)},
		{name: "a running shared group: no exclusive lease", state: sharedBy(other), call: grant, want: is(false)},
		{name: "a running semaphore of 2: 2 permits asked", state: semaphoreOf(2, other), call: permits(2), want: is(true)},
		{name: "a running semaphore of 2: 3 permits asked", state: semaphoreOf(2, other), call: permits(3), want: is(false)},
		{name: "a running semaphore: a shared lease asked", state: semaphoreOf(2, other), call: shared, want: is(false)},
		{name: "held exclusively: no shared lease", state: heldBy(other), call: shared, want: is(false)},
		{name: "free: a shared lease", state: free(), call: shared, want: is(true)},
	})
}
