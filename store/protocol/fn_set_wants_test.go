package protocol_test

import "testing"

func setWantsCall(modes, permits []any) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT string_agg(w.k || '=' || coalesce(w.mode, 'key') || coalesce(':' || w.n, ''), ' ' ORDER BY w.k) AS result
			FROM distributed_lock_set_wants(keys => ARRAY[$1 || '/b', $1 || '/a'], modes => $2::text[], permits => $3::integer[]) w`,
			[]any{key, modes, permits}
	}
}

// wantsOf is the answer for the case's keys a and b, each "key" (the key
// itself), "shared" or "semaphore:n".
func wantsOf(a, b string) func(*testing.T, map[string]any, prepared, observed) {
	return func(t *testing.T, result map[string]any, p prepared, _ observed) {
		t.Helper()
		key := p.key
		if want := key + "/a=" + a + " " + key + "/b=" + b; result["result"] != want {
			t.Errorf("wants %v; want %q", result["result"], want)
		}
	}
}

// A set's keys sorted, each with the lease its record asks for; what it
// cannot mean is refused.
func TestSetWants(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_set_wants")
	f.run(t, []fnCase{
		{name: "no modes: every key itself", state: free(), call: setWantsCall(nil, nil),
			want: want{row: untouched, check: wantsOf("key", "key")}},
		{name: "b shared, a a semaphore of 3", state: free(), call: setWantsCall([]any{"shared", "semaphore"}, []any{nil, 3}),
			want: want{row: untouched, check: wantsOf("semaphore:3", "shared")}},
		{name: "exclusive named", state: free(), call: setWantsCall([]any{"exclusive", nil}, nil),
			want: want{row: untouched, check: wantsOf("key", "key")}},
		{name: "a mode short", state: free(), call: setWantsCall([]any{"shared"}, nil), want: want{err: "22023"}},
		{name: "permits short", state: free(), call: setWantsCall(nil, []any{2}), want: want{err: "22023"}},
		{name: "a mode not known", state: free(), call: setWantsCall([]any{"upgrade", nil}, nil), want: want{err: "23514"}},
		{name: "a semaphore without permits", state: free(), call: setWantsCall([]any{"semaphore", nil}, nil), want: want{err: "22023"}},
		{name: "permits of a shared key", state: free(), call: setWantsCall([]any{"shared", nil}, []any{2, nil}), want: want{err: "22023"}},
		{name: "permits over 1000", state: free(), call: setWantsCall([]any{"semaphore", nil}, []any{1001, nil}), want: want{err: "23514"}},
	})
}
