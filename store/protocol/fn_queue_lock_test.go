package protocol_test

import "testing"

func queueLockCall(exclusive bool) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT 1 AS result FROM (SELECT distributed_lock_queue_lock(key => $1, exclusive => $2) OFFSET 0) q`,
			[]any{key, exclusive}
	}
}

// Enqueues share the lock; a release that found nobody waits for them.
func TestQueueLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_lock")
	f.run(t, []fnCase{
		{name: "shared beside an enqueue", state: semaphoreOf(2, other), call: queueLockCall(false),
			during: whileLocked(lockQueueSharedSQL, false), want: is(1)},
		{name: "exclusive: waits for the enqueue in flight", state: semaphoreOf(2, other), call: queueLockCall(true),
			during: whileLocked(lockQueueSharedSQL, true), want: is(1)},
		{name: "exclusive, another key's enqueue: no wait", state: semaphoreOf(2, other), call: queueLockCall(true),
			during: whileLocked(`SELECT distributed_lock_queue_lock($1 || ' other', false)`, false), want: is(1)},
	})
}
