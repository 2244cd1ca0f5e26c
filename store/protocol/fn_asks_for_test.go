package protocol_test

import "testing"

// A waiter record's kind against a lease of n permits (0: shared).
func TestAsksFor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_asks_for")
	asks := func(permits int) func(string, prepared) (string, []any) {
		return func(key string, _ prepared) (string, []any) {
			return `SELECT coalesce(distributed_lock_asks_for(w, $2), false) AS result FROM distributed_lock_waiter w
				WHERE w.lock_key = $1`, []any{key, nonZero(permits)}
		}
	}
	f.run(t, []fnCase{
		{name: "a reader, asked shared", state: sharedBy(other).withWaiter(sharedWaiter(w1)), call: asks(0), want: isQueued(true, w1)},
		{name: "a reader, asked as a permit", state: sharedBy(other).withWaiter(sharedWaiter(w1)), call: asks(2), want: isQueued(false, w1)},
		{name: "one of 2 permits, asked as one of 2", state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 2)), call: asks(2),
			want: isQueued(true, w1)},
		{name: "one of 3 permits, asked as one of 2", state: semaphoreOf(2, other).withWaiter(permitWaiter(w1, 3)), call: asks(2),
			want: isQueued(false, w1)},
		{name: "a writer, asked shared", state: sharedBy(other).queued(w1), call: asks(0), want: isQueued(false, w1)},
	})
}
