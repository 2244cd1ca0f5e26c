package protocol_test

import "testing"

func tryQueueLockCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_try_queue_lock(key => $1) AS result`, []any{key}
}

// Enqueues share the lock; one never waits for it: held exclusively, it is
// not had, and the enqueue queues under the row lock instead.
func TestTryQueueLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_try_queue_lock")
	f.run(t, []fnCase{
		{name: "nobody holds it", state: semaphoreOf(2, other), call: tryQueueLockCall, want: is(true)},
		{name: "beside an enqueue", state: semaphoreOf(2, other), call: tryQueueLockCall,
			during: whileLocked(lockQueueSharedSQL, false), want: is(true)},
		{name: "held by a release: not had, no wait", state: semaphoreOf(2, other), call: tryQueueLockCall,
			during: whileLocked(lockQueueExclusiveSQL, false), want: is(false)},
	})
}
