package protocol_test

import "testing"

// Someone to serve: the head waits for the group's kind and a permit is
// free; a head of another kind, a full semaphore or no queue is nobody.
func TestHeadHasRoom(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_head_has_room")
	room := func(_ string, permits int) func(string, prepared) (string, []any) {
		return func(key string, _ prepared) (string, []any) {
			return `SELECT distributed_lock_head_has_room(key => $1, n => $2, ts => clock_timestamp()) AS result`,
				[]any{key, nonZero(permits)}
		}
	}
	f.run(t, []fnCase{
		{name: "a permit free, a permit waiter at the head", state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2)),
			call: room("semaphore", 2), want: isQueued(true, w1)},
		{name: "every permit held", state: semaphoreOf(2, other, w2).withWaiter(permitWaiter(w1, 2)),
			call: room("semaphore", 2), want: isQueued(false, w1)},
		{name: "the one permit free, its holder lapsed", state: semaphoreOf(1).holding(lapsedSlot(w2)).withWaiter(permitWaiter(w1, 1)),
			call: room("semaphore", 1), want: isQueued(true, w1)},
		{name: "a writer at the head, a reader behind", state: sharedBy(other).queued(w1).withWaiter(sharedWaiter(w2)),
			call: room("shared", 0), want: isQueued(false, w1, w2)},
		{name: "a reader at the head of a shared group", state: sharedBy(other).withWaiter(sharedWaiter(w1)),
			call: room("shared", 0), want: isQueued(true, w1)},
		{name: "a waiter for other permits at the head", state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 3)),
			call: room("semaphore", 2), want: isQueued(false, w1)},
		{name: "nobody queued", state: semaphoreOf(2, other), call: room("semaphore", 2), want: is(false)},
	})
}
