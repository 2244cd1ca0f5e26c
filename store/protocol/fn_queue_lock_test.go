package protocol_test

import "testing"

func queueLockCall(key string, _ prepared) (string, []any) {
	return `SELECT distributed_lock_queue_lock(key => $1) AS result`, []any{key}
}

// A release that found nobody waits for the enqueues in flight, a bounded
// time: past it, it goes on without the lock, whoever holds it.
func TestQueueLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_lock")
	f.run(t, []fnCase{
		{name: "nobody holds it", state: semaphoreOf(2, other), call: queueLockCall, want: is(true)},
		{name: "waits for the enqueue in flight", state: semaphoreOf(2, other), call: queueLockCall,
			during: whileLocked(lockQueueSharedSQL, true), want: is(true)},
		{name: "held past the bound: not had", state: semaphoreOf(2, other), call: queueLockCall,
			during: whileLocked(lockQueueSharedSQL, false), want: is(false)},
		{name: "another key's enqueue: no wait", state: semaphoreOf(2, other), call: queueLockCall,
			during: whileLocked(`SELECT distributed_lock_try_queue_lock($1 || ' other')`, false), want: is(true)},
	})
}
