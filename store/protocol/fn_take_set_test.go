package protocol_test

import (
	"testing"
	"time"
)

func takeSetCall(mode string) func(string, prepared) (string, []any) {
	return func(key string, p prepared) (string, []any) {
		keys := p.all()
		modes := make([]any, len(keys))
		modes[0] = null(mode)
		return `SELECT t.* FROM distributed_lock_take_set(keys => $1, owner => $2, ttl_us => $3, lease_metadata => NULL,
			event_actor => NULL, event_detail => NULL, log_grants => false, lock_delay_us => 0, modes => $4::text[],
			permits => NULL) t ORDER BY t.lock_key = $5 DESC LIMIT 1`,
			[]any{keys, me, time.Minute.Microseconds(), modes, key}
	}
}

// A set's keys one by one, each in its mode, all or none.
func TestTakeSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_take_set")
	f.run(t, []fnCase{
		{name: "the key shared in a running group, the other exclusive and free: both taken",
			state: sharedBy(other).and(also{name: "b", state: free()}), call: takeSetCall("shared"),
			want: want{outcome: "acquired", owner: me, token: drawnToken, remaining: &span{}, row: untouched,
				slots: []slotWant{asPrepared, slotGranted(me, "acquired", time.Minute)},
				check: func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "b", me, true) }}},
		{name: "the key held exclusively: refused, the key before it not kept",
			state: heldBy(other).and(also{name: "a", first: true, state: free()}), call: takeSetCall("shared"),
			want: want{outcome: "held", owner: other, token: keptToken, row: untouched, refusal: queueOf(0),
				remaining: &span{50*time.Second - slack, 50 * time.Second},
				check:     func(t *testing.T, _ map[string]any, p prepared, _ observed) { otherIs(t, p, "a", other, false) }}},
	})
}
