package protocol_test

import (
	"testing"
	"time"
)

// ts is the database's clock, as the functions that call it pass theirs.
func keepWakingCall(key string, _ prepared) (string, []any) {
	return `SELECT true AS returned FROM distributed_lock_keep_waking(key => $1, ts => clock_timestamp(), seen_for_us => $2)`,
		[]any{key, (30 * time.Second).Microseconds()}
}

// keep_waking writes wake_until = ts + 2·seen_for only when it would run out
// within seen_for: most calls leave the hot row alone.
func TestKeepWaking(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_keep_waking")
	woken := rowWant{owner: other, token: keptToken, keptExpiry: true, ttl: time.Minute, kind: "acquired",
		prevOwner: "earlier", prevToken: keptPrevious, wakes: &span{time.Minute - slack, time.Minute}}
	wakingFor := func(d time.Duration) state {
		return heldBy(other).with(func(r *lockRow) { r.wakeFor = d })
	}
	f.run(t, []fnCase{
		{name: "no row", state: noRow(), call: keepWakingCall, want: want{row: untouched}},
		{name: "nobody waiting", state: heldBy(other), call: keepWakingCall, want: want{row: woken}},
		{name: "running out within seen_for", state: wakingFor(10 * time.Second), call: keepWakingCall, want: want{row: woken}},
		{name: "ran out", state: wakingFor(-time.Second), call: keepWakingCall, want: want{row: woken}},
		{name: "longer than seen_for: left alone", state: wakingFor(45 * time.Second), call: keepWakingCall, want: want{row: untouched}},
	})
}
