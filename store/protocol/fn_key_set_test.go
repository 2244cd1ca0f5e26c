package protocol_test

import "testing"

func keySetCall(keys func(key string) []string) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT distributed_lock_key_set(keys => $1) AS result`, []any{keys(key)}
	}
}

func TestKeySet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_key_set")
	f.run(t, []fnCase{
		{name: "sorted", state: noRow(), call: keySetCall(func(string) []string { return []string{"b", "c", "a"} }),
			want: want{row: untouched, value: []string{"a", "b", "c"}}},
		{name: "64 keys", state: noRow(), call: keySetCall(manyKeys(64)), want: want{row: untouched,
			check: func(t *testing.T, result map[string]any, _ prepared, _ observed) {
				if keys, _ := result["result"].([]any); len(keys) != 64 {
					t.Errorf("%d keys; want 64", len(keys))
				}
			}}},
		{name: "a key named twice", state: noRow(), call: keySetCall(func(string) []string { return []string{"a", "b", "a"} }), want: want{err: "22023"}},
		{name: "no keys", state: noRow(), call: keySetCall(func(string) []string { return []string{} }), want: want{err: "22023"}},
		{name: "129 keys", state: noRow(), call: keySetCall(manyKeys(129)), want: want{err: "22023"}},
	})
}
