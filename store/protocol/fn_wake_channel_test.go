package protocol_test

import "testing"

// wakeChannelCall wakes the key's waiters on channel ("": NULL).
func wakeChannelCall(channel string) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT true AS returned FROM distributed_lock_wake_channel(channel => nullif($2, ''), key => $1)`,
			[]any{key, channel}
	}
}

func TestWakeChannel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_wake_channel")
	f.run(t, []fnCase{
		{name: "no channel: the shared one, the key as payload", state: heldBy(other), call: wakeChannelCall(""),
			want: want{row: untouched, notify: []notifyWant{wakeUp}}},
		{name: "a wake channel: JSON naming schema and key", state: heldBy(other), call: wakeChannelCall(chanA),
			want: want{row: untouched, notify: []notifyWant{wakeUp.on(chanA)}}},
	})
}
