package protocol_test

import "testing"

// queueLockCall takes the key's queue lock, exclusively or not, waiting at
// most 300 ms.
func queueLockCall(exclusive bool) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT distributed_lock_queue_lock(key => $1, exclusive => $2, wait => interval '300 milliseconds') AS result`,
			[]any{key, exclusive}
	}
}

// A release that found nobody waits for the enqueues in flight, and an
// enqueue joining a group for such a release, a bounded time: past it,
// it goes on without the lock, whoever holds it.
func TestQueueLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queue_lock")
	f.run(t, []fnCase{
		{name: "exclusive, nobody holds it", state: semaphoreOf(2, other), call: queueLockCall(true), want: is(true)},
		{name: "exclusive: waits for the enqueue in flight", state: semaphoreOf(2, other), call: queueLockCall(true),
			during: whileLocked(lockQueueSharedSQL, true), want: is(true)},
		{name: "exclusive, held past the bound: not had", state: semaphoreOf(2, other), call: queueLockCall(true),
			during: whileLocked(lockQueueSharedSQL, false), want: is(false)},
		{name: "exclusive, another key's enqueue: no wait", state: semaphoreOf(2, other), call: queueLockCall(true),
			during: whileLocked(`SELECT distributed_lock_try_queue_lock($1 || ' other')`, false), want: is(true)},
		{name: "shared beside an enqueue", state: semaphoreOf(2, other), call: queueLockCall(false),
			during: whileLocked(lockQueueSharedSQL, false), want: is(true)},
		{name: "shared: waits for a release holding it", state: semaphoreOf(2, other), call: queueLockCall(false),
			during: whileLocked(lockQueueExclusiveSQL, true), want: is(true)},
		{name: "shared, held past the bound: not had", state: semaphoreOf(2, other), call: queueLockCall(false),
			during: whileLocked(lockQueueExclusiveSQL, false), want: is(false)},
		{name: "the caller's lock_timeout is kept", state: semaphoreOf(2, other), call: func(key string, _ prepared) (string, []any) {
			return `SELECT current_setting('lock_timeout') = '0' AS result
				FROM (SELECT distributed_lock_queue_lock($1, true, interval '300 milliseconds') OFFSET 0) q`, []any{key}
		}, want: is(true)},
	})
}
