package protocol_test

import (
	"testing"
	"time"
)

func queuedAnswerCall(cycle string) func(string, prepared) (string, []any) {
	return func(key string, p prepared) (string, []any) {
		return `SELECT * FROM distributed_lock_queued_answer(key => $1, id => $2, found_cycle => $3::jsonb,
			ts => clock_timestamp())`, []any{key, p.waiter(me), null(cycle)}
	}
}

// A queued record is told the holder and its place; a refused one the
// cycle, and no record.
func TestQueuedAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_queued_answer")
	f.run(t, []fnCase{
		{name: "queued second", state: heldBy(other).queued(w1, me), call: queuedAnswerCall(""), want: want{
			outcome: "queued", owner: other, token: keptToken, waiterID: me, row: untouched,
			remaining: &span{50*time.Second - slack, 50 * time.Second},
			waiters:   waiters(w1, me), check: dbNowReturned, refusal: placeIn(2, 2)}},
		{name: "a cycle found", state: heldBy(other), call: queuedAnswerCall(`[{"owner": "x"}]`), want: want{
			outcome: "deadlock", owner: other, token: keptToken, row: untouched,
			remaining: &span{50*time.Second - slack, 50 * time.Second}, check: dbNowReturned, refusal: queueOf(0)}},
	})
}
