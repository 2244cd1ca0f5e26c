package history

import (
	"strings"
	"testing"
)

// vouchedHistory: the killed session's leases (killed()), whose holder's
// ValidFor vouched for x until 320ms and for y until 300ms; b's steals of
// them arrived at 331ms and 311ms.
func vouchedHistory() ([]Op, []Vouched, Observed) {
	ops, obs := killed()
	vouched := []Vouched{
		{Client: 1, Key: "x", Owner: "s", Token: 1, Until: 320 * ms, Bound: true},
		{Client: 1, Key: "y", Owner: "s", Token: 2, Until: 300 * ms, Bound: true},
	}
	return ops, vouched, obs
}

func TestVouchedHistoryPasses(t *testing.T) {
	ops, vouched, obs := vouchedHistory()
	r := Check(ops, nil, vouched, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %q", r.Violations)
	}
	if st := r.Stats; st.Vouched != 2 || st.VouchedThenTaken != 2 || st.VouchedBound != 2 || st.VouchedBoundThenTaken != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestCheckerFlagsGrantsBeforeWhatValidForVouchedFor: the grant that took
// the key over, or a later one, arrived before the last instant the
// holder's ValidFor vouched for.
func TestCheckerFlagsGrantsBeforeWhatValidForVouchedFor(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ops *[]Op, vouched []Vouched, obs *Observed)
		want   string
	}{
		{"the steal's reply arrived before the promise", func(_ *[]Op, vouched []Vouched, _ *Observed) {
			vouched[1].Until = 312 * ms
		}, `client 1's lease of "y" (token 2, kept by a session) was vouched for until 312ms, but client 2 heard of its grant of token 4`},
		{"the steal's reply was lost, a later grant's arrived before the promise", func(ops *[]Op, vouched []Vouched, obs *Observed) {
			vouched[0].Until = 400 * ms
			(*ops)[3].Result = Unknown
			*ops = append(*ops, grant(3, "x", "c", 5, "acquired", 340*ms, 350*ms, 450*ms))
			obs.Events = append(obs.Events, ev(5, "x", "released", "b", 3, 335*ms), ev(6, "x", "acquired", "c", 5, 345*ms))
		}, `client 1's lease of "x" (token 1, kept by a session) was vouched for until 400ms, but client 3 heard of its grant of token 5 (at or after token 3's`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, vouched, obs := vouchedHistory()
			tc.mutate(&ops, vouched, &obs)
			r := Check(ops, nil, vouched, obs)
			found := false
			for _, v := range r.Violations {
				found = found || strings.Contains(v, tc.want)
			}
			if !found {
				t.Fatalf("want a violation containing %q; got %q", tc.want, r.Violations)
			}
		})
	}
}

// A reader's lease vouched for (modes()): only a grant that conflicts
// with it, the writer w's at 51ms, is held to the promise, not r2's beside
// it at 8ms.
func TestVouchedSharedLeaseIsHeldOnlyToConflictingGrants(t *testing.T) {
	ops, obs := modes()
	vouched := []Vouched{{Client: 6, Key: "doc", Owner: "r1", Token: 16, Until: 29 * ms}}
	if r := Check(ops, nil, vouched, obs); !r.OK() || r.Stats.VouchedThenTaken != 1 {
		t.Fatalf("a reader beside it flagged, or the writer not checked: %q, %+v", r.Violations, r.Stats)
	}
	vouched[0].Until = 60 * ms
	r := Check(ops, nil, vouched, obs)
	if len(r.Violations) != 1 || !strings.Contains(r.Violations[0], `client 8 heard of its grant of token 19`) {
		t.Fatalf("want the writer's grant flagged alone; got %q", r.Violations)
	}
}
