package protocol_test

import (
	"testing"
	"time"
)

func pollAnswerCall(key string, p prepared) (string, []any) {
	return `SELECT * FROM distributed_lock_poll_answer(key => $1, id => $2, found_cycle => NULL, ts => clock_timestamp())`,
		[]any{key, p.waiter(me)}
}

// A check is answered the grant handed to its record, its place while it
// waits, or gone once its record lapsed.
func TestPollAnswer(t *testing.T) {
	t.Parallel()
	f := newWaitsFixture(t, "distributed_lock_poll_answer")
	f.run(t, []fnCase{
		{name: "queued second", state: heldBy(other).queued(w1, me), call: pollAnswerCall, want: want{
			outcome: "queued", owner: other, token: keptToken, waiterID: me, row: untouched, waiters: waiters(w1, me),
			check: dbNowReturned, refusal: placeIn(2, 2)}},
		{name: "its record lapsed: gone", state: heldBy(other).withWaiter(waiterRow{owner: me, seenFor: -time.Second}),
			call: pollAnswerCall, want: want{outcome: "gone", owner: other, token: keptToken, waiterID: me, row: untouched,
				remaining: &span{50*time.Second - slack, 50 * time.Second}, waiters: waiters(me), check: dbNowReturned}},
	})
}
