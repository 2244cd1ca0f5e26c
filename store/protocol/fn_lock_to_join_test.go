package protocol_test

import (
	"testing"
	"time"
)

func lockToJoinCall(permits int) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT (j.r).lock_key IS NOT NULL AS result, j.joining
			FROM distributed_lock_lock_to_join(key => $1, owner => $2, n => $3, seen_for_us => $4) j`,
			[]any{key, me, nonZero(permits), (30 * time.Second).Microseconds()}
	}
}

// joinedAs: the call found the row (or not) and joins beside the others
// (or not).
func joinedAs(found, joining bool) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		if result["result"] != found || result["joining"] != joining {
			t.Errorf("row found %v, joining %v; want %v, %v", result["result"], result["joining"], found, joining)
		}
	}
}

// A running group of the kind asked for, whose releases hand off, is
// joined beside the other enqueues; any other row is taken for update.
func TestLockToJoin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_lock_to_join")
	f.run(t, []fnCase{
		{name: "a running shared group that hands off: joined", state: sharedBy(other).waking(), call: lockToJoinCall(0),
			want: want{row: untouched, check: joinedAs(true, true)}},
		{name: "an exclusive lease: for update", state: heldBy(other), call: lockToJoinCall(0),
			want: want{row: untouched, check: joinedAs(true, false)}},
		{name: "a group of another kind: for update", state: semaphoreOf(2, other).waking(), call: lockToJoinCall(0),
			want: want{row: untouched, check: joinedAs(true, false)}},
		{name: "no row", state: noRow(), call: lockToJoinCall(0), want: want{row: untouched, check: joinedAs(false, false)}},
	})
}
