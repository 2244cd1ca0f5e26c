package faults

import (
	"strings"
	"testing"
	"time"
)

// A hand-made history: key k granted to a (token 1) at t0+10ms, stolen by b
// (token 2) at t0+100ms. Each case breaks it in one way and names the
// violation the checker must report.
func TestCheckFindsEachViolation(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	prev := int64(1)
	baseGrants := func() []GrantRow {
		return []GrantRow{
			{EventID: 1, Key: "k", Owner: "a", Token: 1, Kind: "acquired", OccurredAt: ms(10), CommittedAt: ms(10)},
			{EventID: 2, Key: "k", Owner: "b", Token: 2, Kind: "stolen", PreviousToken: &prev, OccurredAt: ms(100), CommittedAt: ms(100)},
		}
	}
	baseWrites := func() []WriteRow {
		return []WriteRow{
			{OpID: 1, Key: "k", Owner: "a", Token: 1, Seq: 1, CommittedAt: ms(20)},
			{OpID: 2, Key: "k", Owner: "b", Token: 2, Seq: 2, CommittedAt: ms(120)},
		}
	}
	baseRec := func() *Recorder {
		r := NewRecorder()
		r.grant(GrantRecord{Worker: 1, Key: "k", Owner: "a", Token: 1})
		r.grant(GrantRecord{Worker: 2, Key: "k", Owner: "b", Token: 2})
		r.write(WriteRecord{OpID: 1, Worker: 1, Key: "k", Owner: "a", Token: 1, Result: Committed})
		r.write(WriteRecord{OpID: 2, Worker: 2, Key: "k", Owner: "b", Token: 2, Result: Committed})
		r.end(LeaseEnd{Worker: 1, Key: "k", Owner: "a", Token: 1, At: ms(80), Lost: true,
			Remaining: 20 * time.Millisecond, ExpiresAt: ms(95), OnArrival: 90 * time.Millisecond})
		return r
	}

	if r := Check(baseWrites(), baseGrants(), baseRec()); len(r.Violations) != 0 {
		t.Fatalf("clean history: %q", r.Violations)
	}

	cases := []struct {
		name   string
		mutate func(w *[]WriteRow, g *[]GrantRow, r *Recorder)
		want   string
	}{
		{"zombie write after the steal", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			*w = append(*w, WriteRow{OpID: 3, Key: "k", Owner: "a", Token: 1, Seq: 3, CommittedAt: ms(130)})
			r.write(WriteRecord{OpID: 3, Key: "k", Owner: "a", Token: 1, Result: Committed})
		}, "tokens went backwards"},
		{"write of the old lease committing after the next grant", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			(*w)[0].CommittedAt = ms(105)
		}, "overlapping leases"},
		{"write under a token never granted", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			(*w)[1].Token = 7
		}, "never granted"},
		{"acknowledged write missing", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			*w = (*w)[:1]
		}, "acknowledged as committed but is missing"},
		{"rolled-back write present", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			*w = append(*w, WriteRow{OpID: 3, Key: "k", Owner: "b", Token: 2, Seq: 3, CommittedAt: ms(140)})
			r.write(WriteRecord{OpID: 3, Key: "k", Owner: "b", Token: 2, Result: RolledBack})
		}, "rolled back but is in the table"},
		{"token granted twice", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			*g = append(*g, GrantRow{EventID: 3, Key: "other", Owner: "c", Token: 2, Kind: "acquired", CommittedAt: ms(150)})
		}, "granted twice"},
		{"reported grant not in the log", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			r.grant(GrantRecord{Worker: 3, Key: "k", Owner: "c", Token: 9})
		}, "not in the event log"},
		{"keepalive cancelled after the local deadline", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			r.ends[0].Remaining = 0
		}, "local deadline"},
		{"keepalive cancelled after the known expiry", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			r.ends[0].At = ms(96)
		}, "not before the expiry"},
		{"stolen while still trusted", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			r.ends[0].At, r.ends[0].ExpiresAt = ms(101), ms(200)
		}, "while w1 still trusted it"},
		{"grants committing out of token order", func(w *[]WriteRow, g *[]GrantRow, r *Recorder) {
			(*g)[0].CommittedAt = ms(110)
		}, "committed after grant of larger token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, g, r := baseWrites(), baseGrants(), baseRec()
			c.mutate(&w, &g, r)
			rep := Check(w, g, r)
			for _, v := range rep.Violations {
				if strings.Contains(v, c.want) {
					return
				}
			}
			t.Fatalf("violations %q; want one containing %q", rep.Violations, c.want)
		})
	}
}
