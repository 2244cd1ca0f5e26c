package protocol_test

import "testing"

func TestOfKind(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_of_kind")
	kind := func(permits int) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_of_kind(l, $2)`, nonZero(permits))
	}
	f.run(t, []fnCase{
		{name: "shared, asked shared", state: sharedBy(other), call: kind(0), want: is(true)},
		{name: "shared, asked as a permit", state: sharedBy(other), call: kind(2), want: is(false)},
		{name: "a semaphore of 2, asked as one of 2", state: semaphoreOf(2, other), call: kind(2), want: is(true)},
		{name: "a semaphore of 2, asked as one of 3", state: semaphoreOf(2, other), call: kind(3), want: is(false)},
		{name: "a semaphore, asked shared", state: semaphoreOf(2, other), call: kind(0), want: is(false)},
		{name: "held alone, asked shared", state: heldBy(other), call: kind(0), want: is(false)},
	})
}
