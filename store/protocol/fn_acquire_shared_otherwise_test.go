package protocol_test

import (
	"testing"
	"time"
)

// acquireSharedOtherwiseCall calls the internal function directly for
// owner and permits (nil: shared), as distributed_lock_acquire_shared does
// once its grant into a running group granted nothing: with joining, the
// key's group row as the attempt read it (the caller holds it for share),
// else none.
func acquireSharedOtherwiseCall(owner string, permits any, joining bool) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT * FROM distributed_lock_acquire_shared_otherwise(key => $1, owner => $2, ttl_us => $3, n => $4,
			lease_metadata => NULL, event_actor => NULL, event_detail => NULL, log_grants => false,
			joined => CASE WHEN $5 THEN (SELECT l FROM distributed_lock l WHERE l.lock_key = $1 AND l.slot = 0 FOR SHARE) END,
			ts => CASE WHEN $5 THEN clock_timestamp() END)`,
			[]any{key, owner, time.Minute.Microseconds(), permits, joining}
	}
}

// Acquire_shared's paths past its one-statement grant: a group formed, a
// renewal, a full semaphore, a queue, a reserved owner.
func TestAcquireSharedOtherwise(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_acquire_shared_otherwise")
	soonest := holderRow{owner: w1, expiresIn: 20 * time.Second}
	f.run(t, []fnCase{
		{name: "free: the group formed, its first slot granted", state: free(), call: acquireSharedOtherwiseCall(me, 2, false),
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{},
				row: formed("semaphore", 2, "acquired", other, keptToken), slots: []slotWant{slotGranted(me, "acquired", time.Minute)},
				check: keyIs("semaphore", 2, -1)}},
		{name: "joining, the caller a holder: renewed", state: semaphoreOf(2, other, me), call: acquireSharedOtherwiseCall(me, 2, true),
			want: want{outcome: "renewed", owner: me, token: slotTok(2), remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotRenewed(2, me, time.Minute)}, check: keyIs("semaphore", 2, -1)}},
		{name: "joining, every permit held: held until the first ends", state: semaphoreOf(2, other).holding(soonest),
			call: acquireSharedOtherwiseCall(me, 2, true),
			want: want{outcome: "held", owner: w1, token: slotTok(2), remaining: &span{20*time.Second - slack, 20 * time.Second},
				row: untouched, refusal: queueOf(0), check: keyIs("semaphore", 2, 2)}},
		{name: "joining, a writer queued: queued", state: sharedBy(other).queued(w1), call: acquireSharedOtherwiseCall(me, nil, true),
			want: want{outcome: "queued", owner: groupOwner, token: keptToken, row: untouched, waiters: waiters(w1),
				refusal: queueOf(1), check: keyIs("shared", 0, 1)}},
		{name: "the reserved owner", state: sharedBy(other), call: acquireSharedOtherwiseCall("*", nil, true), want: want{err: "23514"}},
	})
}
