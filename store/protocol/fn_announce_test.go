package protocol_test

import (
	"testing"
	"time"
)

// announceCall announces a grant to a record on channel ("": none) that
// the grant consumed (it is in no queue any more), with a payload that
// names the schema and the key (the checks read it as a wake-up's).
func announceCall(channel string) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT true AS returned FROM distributed_lock_announce(
			w => jsonb_populate_record(NULL::distributed_lock_waiter,
				jsonb_build_object('waiter_id', 0, 'lock_key', $1::text, 'wake_channel', nullif($2, ''))),
			ts => clock_timestamp(),
			payload => json_build_object('schema', current_schema(), 'key', $1::text)::text)`,
			[]any{key, channel}
	}
}

// A hand-off is heard by the granted waiter's process and by the process
// of the waiter now first in line, and by no other.
func TestAnnounce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_announce")
	announced := wakeUp.on(chanA)
	f.run(t, []fnCase{
		{name: "nobody queued: the waiter's channel alone", state: free(), call: announceCall(chanA),
			want: want{row: untouched, notify: []notifyWant{announced}}},
		{name: "the head on another channel: that one too", state: free().queuedOn(chanB, w1), call: announceCall(chanA),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanB}},
				notify: []notifyWant{announced, wakeUp.on(chanB)}}},
		{name: "the head on the waiter's channel: once", state: free().queuedOn(chanA, w1), call: announceCall(chanA),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanA}}, notify: []notifyWant{announced}}},
		{name: "behind the head: not told", state: free().queuedOn(chanB, w1).queuedOn(chanC, w2), call: announceCall(chanA),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanB}, {owner: w2, channel: chanC}},
				notify: []notifyWant{announced, wakeUp.on(chanB)}}},
		{name: "the first record lapsed: the live head is told",
			state: free().withWaiter(waiterRow{owner: w1, seenFor: -time.Second, channel: chanB}).queuedOn(chanC, w2),
			call:  announceCall(chanA),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanB}, {owner: w2, channel: chanC}},
				notify: []notifyWant{announced, wakeUp.on(chanC)}}},
		{name: "a waiter without a channel: the shared hand-off channel, and the head's", state: free().queuedOn(chanB, w1),
			call: announceCall(""),
			want: want{row: untouched, waiters: []waiterWant{{owner: w1, channel: chanB}},
				notify: []notifyWant{wakeUp.on(handOffChannel), wakeUp.on(chanB)}}},
		{name: "a head without a channel: the shared hand-off channel", state: free().queued(w1), call: announceCall(chanA),
			want: want{row: untouched, waiters: waiters(w1), notify: []notifyWant{announced, wakeUp.on(handOffChannel)}}},
	})
}
