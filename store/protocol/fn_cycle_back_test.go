package protocol_test

import (
	"encoding/json"
	"testing"
)

// cycleBackCall walks back from waiter b (queued for k2, record 7) through
// reached to start a.
func cycleBackCall(reached string) func(string, prepared) (string, []any) {
	return func(string, prepared) (string, []any) {
		return `SELECT c.cycle AS result, c.youngest FROM distributed_lock_cycle_back(reached => $1::jsonb,
			start => 'a', last_owner => 'b', last_key => 'k2', last_id => 7) c`, []any{reached}
	}
}

// walkedBack checks the cycle's steps, from start's, and its youngest record.
func walkedBack(steps string, youngest int64) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, _ prepared, _ observed) {
		t.Helper()
		got, _ := json.Marshal(result["result"])
		var want any
		if err := json.Unmarshal([]byte(steps), &want); err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) || result["youngest"] != youngest {
			t.Errorf("cycle %s, youngest %v; want %s, %d", got, result["youngest"], wantJSON, youngest)
		}
	}
}

// A cycle found is read back from the step that closed it to start: its
// steps in order from start's, and the youngest record on it.
func TestCycleBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_cycle_back")
	f.run(t, []fnCase{
		{name: "two owners: start's step first", state: noRow(),
			call: cycleBackCall(`{"b": {"owner": "a", "key": "k1", "id": 5}}`),
			want: want{row: untouched, check: walkedBack(`[{"owner": "a", "key": "k1"}, {"owner": "b", "key": "k2"}]`, 7)}},
		{name: "three owners: the youngest record anywhere on it", state: noRow(),
			call: cycleBackCall(`{"b": {"owner": "c", "key": "k3", "id": 9}, "c": {"owner": "a", "key": "k1", "id": 2}}`),
			want: want{row: untouched, check: walkedBack(
				`[{"owner": "a", "key": "k1"}, {"owner": "c", "key": "k3"}, {"owner": "b", "key": "k2"}]`, 9)}},
	})
}
