package protocol_test

import (
	"fmt"
	"testing"

	"github.com/lockctl/lockctl/locker"
)

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
		// The database's bound is locker.MaxKeys, the one the client checks.
		{name: fmt.Sprintf("%d keys", locker.MaxKeys), state: noRow(), call: keySetCall(manyKeys(locker.MaxKeys)), want: want{row: untouched,
			check: func(t *testing.T, result map[string]any, _ prepared, _ observed) {
				if keys, _ := result["result"].([]any); len(keys) != locker.MaxKeys {
					t.Errorf("%d keys; want %d", len(keys), locker.MaxKeys)
				}
			}}},
		{name: "a key named twice", state: noRow(), call: keySetCall(func(string) []string { return []string{"a", "b", "a"} }), want: want{err: "22023"}},
		{name: "no keys", state: noRow(), call: keySetCall(func(string) []string { return []string{} }), want: want{err: "22023"}},
		{name: fmt.Sprintf("%d keys", locker.MaxKeys+1), state: noRow(), call: keySetCall(manyKeys(locker.MaxKeys + 1)), want: want{err: "22023"}},
	})
}
