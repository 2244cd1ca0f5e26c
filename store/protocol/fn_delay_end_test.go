package protocol_test

import (
	"testing"
	"time"
)

// endsIn: the rule answers a time within s of the read after the call (nil
// s: NULL), and changes nothing.
func endsIn(s *span) want {
	w := is(nil)
	w.value = nil
	w.check = func(t *testing.T, result map[string]any, _ prepared, after observed) {
		t.Helper()
		at, isTime := result["result"].(time.Time)
		switch {
		case s == nil && result["result"] != nil:
			t.Errorf("delay end %v; want NULL", result["result"])
		case s != nil && (!isTime || !s.holds(at.Sub(after.row.ReadAt))):
			t.Errorf("delay end %v (read at %v); want within [%v, %v] of the read", result["result"], after.row.ReadAt, s.lo, s.hi)
		}
	}
	return w
}

// When the lock-delay after a key's last lease ends: expires_at plus the
// lease's lock_delay for a lease never released (held, run out,
// force-expired) or released only after it ran out, delay_until (a force-release's) for a released one, none
// after a clean release.
func TestDelayEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_delay_end")
	end := ruleCall(`distributed_lock_delay_end(l)`)
	f.run(t, []fnCase{
		{name: "held, no lock-delay: its expiry", state: heldBy(other), call: end, want: endsIn(&span{50*time.Second - slack, 50 * time.Second})},
		{name: "held with a lock-delay: its expiry and the delay", state: heldWithDelay(other), call: end,
			want: endsIn(&span{110*time.Second - slack, 110 * time.Second})},
		{name: "expired, in its lock-delay", state: delayedAfterExpiry(other), call: end, want: endsIn(&span{59*time.Second - slack, 59 * time.Second})},
		{name: "expired, its lock-delay over", state: delayOver(other), call: end, want: endsIn(&span{-time.Minute - slack, -time.Minute})},
		{name: "released after it ran out: its expiry and the delay still", state: releasedLate(other), call: end,
			want: endsIn(&span{58*time.Second - slack, 58 * time.Second})},
		{name: "force-released: delay_until", state: delayedAfterRelease(other), call: end, want: endsIn(&span{30*time.Second - slack, 30 * time.Second})},
		{name: "released cleanly, with a lock-delay: none", state: free().with(func(r *lockRow) { r.lockDelay = time.Minute }), call: end, want: endsIn(nil)},
	})
}
