package protocol_test

import "testing"

// A waiter waits for a lease to end unless both are shared: a shared
// waiter would join the shared holders.
func TestWaitsBehind(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_waits_behind")
	behind := func(mode string) func(string, prepared) (string, []any) {
		return ruleCall(`distributed_lock_waits_behind($2::text, l)`, null(mode))
	}
	f.run(t, []fnCase{
		{name: "an exclusive lease, a shared waiter", state: heldBy(other), call: behind("shared"), want: is(true)},
		{name: "an exclusive lease, a waiter for the key", state: heldBy(other), call: behind(""), want: is(true)},
		{name: "a shared group's row, a waiter for the key", state: sharedBy(other), call: behind(""), want: is(true)},
		{name: "a shared group's row, a shared waiter", state: sharedBy(other), call: behind("shared"), want: is(false)},
		{name: "a semaphore's row, a permit waiter", state: semaphoreOf(2, other), call: behind("semaphore"), want: is(true)},
	})
}
