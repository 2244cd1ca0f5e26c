package protocol_test

import (
	"testing"
	"time"
)

func lockSetCall(key string, p prepared) (string, []any) {
	return `SELECT distributed_lock_lock_set(ks => $1, owner => $2, ttl_us => $3) AS result`,
		[]any{p.all(), me, time.Minute.Microseconds()}
}

func TestLockSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_lock_set")
	f.run(t, []fnCase{
		{name: "every row there: locked, left alone", state: heldBy(other).and(also{name: "b", state: free()}), call: lockSetCall,
			want: want{row: untouched, value: nil}},
		{name: "no row: a free one", state: noRow().and(also{name: "b", state: heldBy(other)}), call: lockSetCall,
			want: want{row: created, check: func(t *testing.T, result map[string]any, p prepared, _ observed) {
				if result["result"] != nil {
					t.Errorf("result %v; want NULL (every row locked)", result["result"])
				}
				otherIs(t, p, "b", other, true)
			}}},
	})
}
