package protocol_test

import (
	"testing"
	"time"
)

// The row as prepared, judged now: acquire_shared's answer on a key with no
// group running that may not be granted anew.
func refuseCall(key string, _ prepared) (string, []any) {
	return `SELECT a.* FROM distributed_lock l, distributed_lock_refuse(r => l, ts => clock_timestamp()) a
		WHERE l.lock_key = $1 AND l.slot = 0`, []any{key}
}

func TestRefuse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_refuse")
	f.run(t, []fnCase{
		{name: "held by another", state: heldBy(other), call: refuseCall, want: want{
			outcome: "held", owner: other, token: keptToken, remaining: &span{50*time.Second - slack, 50 * time.Second}, row: untouched}},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: refuseCall, want: want{
			outcome: "delayed", owner: other, token: keptToken, remaining: &span{-time.Second - slack, -time.Second}, row: untouched}},
		{name: "free, queued", state: free().queued(w1), call: refuseCall, want: want{
			outcome: "queued", owner: other, token: keptToken, remaining: &span{0, 30 * time.Second}, row: untouched,
			waiters: waiters(w1)}},
		{name: "a group ended, queued", state: groupEnded(2).queued(w1), call: refuseCall, want: want{
			outcome: "queued", owner: groupOwner, token: keptToken, remaining: &span{-time.Second - slack, 0}, row: untouched,
			waiters: waiters(w1)}},
	})
}
