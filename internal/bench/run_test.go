package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// TestShortRun runs every series briefly and checks what the numbers must
// show whatever the machine's speed: every series did work, the locker broke
// no lock rule, and keepalives renewed without losing a lease. No timing is
// asserted.
func TestShortRun(t *testing.T) {
	ctx := context.Background()
	rep, err := Run(ctx, testdb.DSN(t), Options{
		Workers:        []int{1, 4},
		Duration:       150 * time.Millisecond,
		Rounds:         1,
		HotKeys:        2,
		KeepaliveLocks: 20,
		KeepaliveTTL:   time.Second,
		KeepaliveFor:   1200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{SeriesReference: 4, SeriesReferenceInline: 4, SeriesLocker: 4,
		SeriesLockerDurable: 4, SeriesLockerLogged: 4, SeriesStatements: 4, SeriesUpsert: 4, SeriesFloorFunction: 4, SeriesCommitFloor: 2, SeriesNetFloor: 2}
	got := map[string]int{}
	for _, r := range rep.Results {
		got[r.Series]++
		if r.Granted == 0 || r.CyclesPerSec <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.RoundTripsPerCycle <= 0 {
			t.Errorf("%s/%s/%d produced no numbers: %+v", r.Series, r.Scenario, r.Workers, r)
		}
		// Under contention TryAcquire may give up after the key changed
		// hands three times between its statements: an outcome of the
		// locker API, not of the benchmark.
		if r.Errors != 0 && !(r.Series == SeriesLocker && strings.Contains(r.FirstError, "changed hands")) {
			t.Errorf("%s/%s/%d: %d errors, first: %s", r.Series, r.Scenario, r.Workers, r.Errors, r.FirstError)
		}
		// The upsert's grants go through the checker too, but whether its
		// tokens hold under contention is what the run reports, not a rule
		// of this benchmark.
		if (strings.HasPrefix(r.Series, SeriesLocker) || r.Series == SeriesStatements || r.Series == SeriesFloorFunction) && !r.Violations.Zero() {
			t.Errorf("%s/%s/%d broke the lock rules: %+v", r.Series, r.Scenario, r.Workers, r.Violations)
		}
	}
	for s, n := range want {
		if got[s] != n {
			t.Errorf("series %s: %d results, want %d (one per scenario and worker count)", s, got[s], n)
		}
	}
	// Round trips are counted, not estimated: the locker's cycle is one
	// grant statement and one release statement; the reference's is BEGIN,
	// SELECT FOR UPDATE, SELECT nextval, INSERT, COMMIT and a DELETE (the
	// inline variant draws the token in the INSERT); the upsert's is one
	// INSERT … ON CONFLICT and one UPDATE, the function floor's two calls.
	for _, r := range rep.Results {
		if r.Scenario != ScenarioSolo {
			continue
		}
		wantRT := map[string]float64{SeriesLocker: 2, SeriesLockerDurable: 2, SeriesLockerLogged: 2, SeriesStatements: 2,
			SeriesReference: 6, SeriesReferenceInline: 5, SeriesUpsert: 2, SeriesFloorFunction: 2, SeriesCommitFloor: 1, SeriesNetFloor: 1}[r.Series]
		if r.RoundTripsPerCycle != wantRT {
			t.Errorf("%s, %d workers: %.2f round trips per cycle, want %.0f", r.Series, r.Workers, r.RoundTripsPerCycle, wantRT)
		}
	}
	if len(rep.Ratios) != 4 || rep.Ratios[0].LockerOverReference <= 0 || rep.Ratios[0].LockerOverUpdate <= 0 ||
		rep.Ratios[0].LockerOverUpsert <= 0 || rep.Ratios[0].UpsertOverUpdate <= 0 ||
		rep.Ratios[0].LockerOverFloorFunction <= 0 || rep.Ratios[0].FloorFunctionOverUpsert <= 0 ||
		rep.Ratios[0].LockerOverReferenceInline <= 0 || rep.Ratios[0].DurableOverReference <= 0 || rep.Ratios[0].LoggedOverReference <= 0 ||
		rep.Ratios[0].LockerOverStatements <= 0 || len(rep.Ratios[0].LockerOverStatementsByRound) != 1 {
		t.Errorf("ratios = %+v; want locker ÷ upsert, ÷ reference and ÷ one-row UPDATE per scenario and worker count", rep.Ratios)
	}
	for _, x := range rep.Ratios {
		if len(x.LockerOverReferenceByRound) != 1 || len(x.LockerOverUpsertByRound) != 1 ||
			(x.Scenario == ScenarioSolo) != (len(x.LockerOverUpdateByRound) == 1) {
			t.Errorf("%s, %d workers: per-round ratios %v and %v; want one per round (floor: without contention only)",
				x.Scenario, x.Workers, x.LockerOverReferenceByRound, x.LockerOverUpdateByRound)
		}
	}
	k := rep.Keepalive
	if k == nil || k.Renewals == 0 || k.Lost != 0 || k.CPU <= 0 {
		t.Errorf("keepalive = %+v; want renewals, none lost, CPU time measured", k)
	}
	var out bytes.Buffer
	if err := rep.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| no contention | 4 | locker |", "| hot keys | 1 | reference |", "| hot keys | 4 | upsert |", "Keepalive: 20 locks"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, out.String())
		}
	}
}
