package protocol_test

import "testing"

// Waiters ahead of a record are the live ones queued before it; ahead of a
// caller's own attempt (NULL), every live one.
func TestQueuedBefore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queued_before")
	before := func(who string) func(string, prepared) (string, []any) {
		return func(key string, p prepared) (string, []any) {
			var head any
			if who != "" {
				head = p.waiter(who)
			}
			return `SELECT distributed_lock_queued_before(key => $1, head => $2, ts => clock_timestamp()) AS result`,
				[]any{key, head}
		}
	}
	f.run(t, []fnCase{
		{name: "nobody queued", state: free(), call: before(""), want: is(false)},
		{name: "queued: ahead of an attempt", state: free().queued(w1), call: before(""), want: isQueued(true, w1)},
		{name: "the head: nobody ahead", state: free().queued(w1, w2), call: before(w1), want: isQueued(false, w1, w2)},
		{name: "the second: the head ahead", state: free().queued(w1, w2), call: before(w2), want: isQueued(true, w1, w2)},
	})
}
