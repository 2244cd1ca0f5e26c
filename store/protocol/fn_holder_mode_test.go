package protocol_test

import "testing"

// A lease of n permits is a semaphore's; one without permits a shared
// lease.
func TestHolderMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_holder_mode")
	modeOf := func(n int) func(string, prepared) (string, []any) {
		return func(string, prepared) (string, []any) {
			return `SELECT distributed_lock_holder_mode(n => $1) AS result`, []any{nonZero(n)}
		}
	}
	f.run(t, []fnCase{
		{name: "no permits: shared", state: noRow(), call: modeOf(0), want: is("shared")},
		{name: "three permits: a semaphore", state: noRow(), call: modeOf(3), want: is("semaphore")},
	})
}
