package protocol_test

import "testing"

func commitLazilyCall(lazy bool) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT current_setting('synchronous_commit') AS result
			FROM (SELECT distributed_lock_commit_lazily(lazy => $2) OFFSET 0) c, distributed_lock l WHERE l.lock_key = $1`,
			[]any{key, lazy}
	}
}

// This server has no synchronous standbys: lazy turns synchronous_commit
// off for the transaction; not lazy leaves the session's.
func TestCommitLazily(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_commit_lazily")
	f.run(t, []fnCase{
		{name: "lazy", state: free(), call: commitLazilyCall(true), want: is("off")},
		{name: "not lazy", state: free(), call: commitLazilyCall(false), want: is("on")},
	})
}
