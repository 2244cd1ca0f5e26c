package protocol_test

import "testing"

// A caller's microseconds as an interval, never overflowing: what it is
// stored as refuses what is out of range, by name.
func TestUS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "distributed_lock_us")
	f.run(t, []fnCase{
		{name: "a minute", state: heldBy(other), call: ruleCall(`distributed_lock_us($2) = interval '1 minute'`, int64(60e6)),
			want: is(true)},
		{name: "2^63-1: about 31 years, no overflow", state: heldBy(other),
			call: ruleCall(`distributed_lock_us($2) = interval '1 microsecond' * 1e15`, maxInt64), want: is(true)},
		{name: "-2^63: as far the other way", state: heldBy(other),
			call: ruleCall(`distributed_lock_us($2) = interval '-1 microsecond' * 1e15`, minInt64), want: is(true)},
		{name: "added to now: no overflow", state: heldBy(other),
			call: ruleCall(`c.ts + distributed_lock_us($2) > c.ts`, maxInt64), want: is(true)},
	})
}
