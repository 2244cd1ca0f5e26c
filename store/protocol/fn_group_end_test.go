package protocol_test

import (
	"testing"
	"time"
)

// A running group's row expires at the group's end, so every rule that
// reads the row sees the key held; an ended group's row does not.
func TestGroupEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_group_end")
	atGroupEnd := ruleCall(`l.expires_at = distributed_lock_group_end()`)
	f.run(t, []fnCase{
		{name: "the far future", state: noRow(), call: func(string, prepared) (string, []any) {
			return `SELECT distributed_lock_group_end() AS result`, nil
		}, want: want{row: untouched, check: func(t *testing.T, result map[string]any, _ prepared, _ observed) {
			t.Helper()
			end, ok := result["result"].(time.Time)
			if want := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC); !ok || !end.Equal(want) {
				t.Errorf("group end %v; want %v", result["result"], want)
			}
		}}},
		{name: "a running group's row expires then", state: sharedBy(other), call: atGroupEnd, want: is(true)},
		{name: "an ended group's row does not", state: groupEnded(2), call: atGroupEnd, want: is(false)},
		{name: "an exclusive lease's does not", state: heldBy(other), call: atGroupEnd, want: is(false)},
	})
}
