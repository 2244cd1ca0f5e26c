package protocol_test

import "testing"

func lazilyCall(lazy bool) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT current_setting('synchronous_commit') AS result
			FROM (SELECT distributed_lock_lazily(lazy => $2) OFFSET 0) c, distributed_lock l WHERE l.lock_key = $1`,
			[]any{key, lazy}
	}
}

// This server has no synchronous standbys: lazy turns synchronous_commit
// off for the transaction; not lazy leaves the session's.
func TestLazily(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_lazily")
	f.run(t, []fnCase{
		{name: "lazy", state: free(), call: lazilyCall(true), want: is("off")},
		{name: "not lazy", state: free(), call: lazilyCall(false), want: is("on")},
	})
}
