package history

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lockview"
)

// converting: on doc, w takes it alone (token 1) and writes; at 20ms it
// downgrades (token 2, shared) and r reads beside it (token 3); both
// write; r releases at 40ms; at 50ms w upgrades: its shared lease ends
// (upgraded) and it is granted doc alone (token 4) in one transaction,
// writes and releases.
func converting() ([]Op, Observed) {
	ops := []Op{
		grant(1, "doc", "w", 1, "acquired", 0, 5*ms, 105*ms),
		write(1, "doc", "w", 1, 1, 10*ms),
		sharedOp(grant(1, "doc", "w", 2, "acquired", 19*ms, 21*ms, 121*ms)),
		sharedOp(grant(2, "doc", "r", 3, "acquired", 24*ms, 26*ms, 126*ms)),
		write(2, "doc", "r", 3, 1, 30*ms),
		write(1, "doc", "w", 2, 2, 32*ms),
		release(2, "doc", "r", 3, 40*ms),
		grant(1, "doc", "w", 4, "acquired", 45*ms, 51*ms, 150*ms),
		write(1, "doc", "w", 4, 3, 55*ms),
		release(1, "doc", "w", 4, 60*ms),
	}
	prev := int64(1)
	down := sharedEv(ev(2, "doc", "downgraded", "w", 2, 20*ms))
	down.PreviousToken = &prev
	obs := Observed{
		Events: []lockview.Event{
			ev(1, "doc", "acquired", "w", 1, 4*ms),
			down,
			sharedEv(ev(3, "doc", "acquired", "r", 3, 25*ms)),
			ev(4, "doc", "released", "r", 3, 40*ms),
			ev(5, "doc", "upgraded", "w", 2, 50*ms),
			ev(6, "doc", "acquired", "w", 4, 50*ms),
			ev(7, "doc", "released", "w", 4, 60*ms),
		},
		Writes: []GuardedWrite{
			{Key: "doc", Token: 1, Writer: "w", WriterSeq: 1, CommitSeq: 1},
			{Key: "doc", Token: 3, Writer: "r", WriterSeq: 1, CommitSeq: 2},
			{Key: "doc", Token: 2, Writer: "w", WriterSeq: 2, CommitSeq: 3},
			{Key: "doc", Token: 4, Writer: "w", WriterSeq: 3, CommitSeq: 4},
		},
	}
	return ops, obs
}

func TestConversionsPass(t *testing.T) {
	ops, obs := converting()
	r := Check(ops, nil, nil, obs)
	if !r.OK() {
		t.Fatalf("violations in a correct history: %q", r.Violations)
	}
	if st := r.Stats; st.Downgrades != 1 || st.Upgrades != 1 || st.Grants != 4 || st.SharedGrants != 2 || st.FencedWrites != 4 {
		t.Fatalf("stats = %+v", st)
	}
}

// What a conversion gone wrong would look like, each flagged.
func TestConversionsFlagged(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(ops []Op, obs *Observed) []Op
		want   string
	}{
		// The upgrade granted while r still reads: r's lease runs to 126ms.
		"upgraded beside a reader": {func(ops []Op, obs *Observed) []Op {
			obs.Events = append(obs.Events[:3], obs.Events[4:]...) // r never released
			return append(ops[:6], ops[7:]...)
		}, "overlap"},
		// The downgrade's shared lease drew a token below the exclusive one.
		"a downgrade's token below the lease it ended": {func(ops []Op, obs *Observed) []Op {
			low := int64(0)
			obs.Events[1].Token = &low
			ops[2].Token = 0
			return ops
		}, "token went backwards"},
		// An upgrade ending a lease the key does not have.
		"an upgrade of no lease": {func(ops []Op, obs *Observed) []Op {
			other := int64(99)
			obs.Events[4].Token = &other
			return ops
		}, "not an unreleased lease"},
		// A write under the exclusive lease committed after the downgrade
		// let a reader in.
		"a write under the downgraded lease after it": {func(ops []Op, obs *Observed) []Op {
			obs.Writes[0].CommitSeq, obs.Writes[1].CommitSeq = 2, 1
			return ops
		}, "stale write"},
	} {
		t.Run(name, func(t *testing.T) {
			ops, obs := converting()
			ops = tc.change(ops, &obs)
			r := Check(ops, nil, nil, obs)
			if !strings.Contains(strings.Join(r.Violations, "\n"), tc.want) {
				t.Fatalf("violations %q; want one saying %q", r.Violations, tc.want)
			}
		})
	}
}
