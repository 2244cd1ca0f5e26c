package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// A short pooler run: every series did work on its own path, the locker
// broke no lock rule either way, and the report carries both ratios and the
// verdict. No timing is asserted.
func TestPoolerScenario(t *testing.T) {
	if _, err := pgtemp.FindBouncer(); err != nil {
		testdb.Unavailable(t, "%v", err)
	}
	srv := testdb.Server(t)
	rep, err := RunPooler(context.Background(), srv, PoolerOptions{Workers: 2, Duration: 150 * time.Millisecond, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Series)
		if r.Granted == 0 || r.Errors != 0 || !r.Violations.Zero() {
			t.Errorf("%s: %d granted, %d errors (%s), violations %+v", r.Series, r.Granted, r.Errors, r.FirstError, r.Violations)
		}
		want := map[bool]float64{true: 2, false: 1}[strings.HasPrefix(r.Series, "locker")]
		if r.RoundTripsPerCycle != want {
			t.Errorf("%s: %.2f round trips per cycle, want %.0f", r.Series, r.RoundTripsPerCycle, want)
		}
	}
	if want := []string{SeriesLockerDirect, SeriesLockerPooled, SeriesUpdateDirect, SeriesUpdatePooled}; !slices.Equal(names, want) {
		t.Errorf("series = %q, want %q", names, want)
	}
	if len(rep.LockKeptByRound) != 2 || len(rep.UpdateKeptByRound) != 2 || len(rep.Target.ByRound) != 2 || rep.Target.Got <= 0 {
		t.Errorf("ratios: lock %v, update %v, target %+v; want one per round", rep.LockKeptByRound, rep.UpdateKeptByRound, rep.Target)
	}
	var out strings.Builder
	if err := rep.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| locker, through PgBouncer |", "| one-row UPDATE |", "≥ 0.90"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// The verdict divides the two shares kept within each round, not only
// their medians.
func TestPoolerTargetDividesTheSharesOfEachRound(t *testing.T) {
	at := func(series string, round int, granted int64) sample {
		return sample{series: series, scenario: ScenarioSolo, workers: 8, round: round, elapsed: time.Second, granted: granted}
	}
	rep := &PoolerReport{Workers: 8}
	rep.summarize([]sample{
		at(SeriesLockerDirect, 0, 100), at(SeriesLockerPooled, 0, 80), at(SeriesUpdateDirect, 0, 400), at(SeriesUpdatePooled, 0, 320),
		at(SeriesLockerDirect, 1, 100), at(SeriesLockerPooled, 1, 60), at(SeriesUpdateDirect, 1, 400), at(SeriesUpdatePooled, 1, 400),
		at(SeriesLockerDirect, 2, 100), at(SeriesLockerPooled, 2, 70), at(SeriesUpdateDirect, 2, 400), at(SeriesUpdatePooled, 2, 360),
	})
	if want := []float64{1, 0.6, 0.7 / 0.9}; !slices.EqualFunc(rep.Target.ByRound, want, near) {
		t.Errorf("per-round verdicts = %v, want %v", rep.Target.ByRound, want)
	}
	if !near(rep.LockKept, 0.7) || !near(rep.UpdateKept, 0.9) || !near(rep.Target.Got, 0.7/0.9) || rep.Target.Met {
		t.Errorf("lock kept %.3f, update kept %.3f, verdict %+v; want 0.70, 0.90 and 0.78 < 0.9, not met",
			rep.LockKept, rep.UpdateKept, rep.Target)
	}
	if n := rep.Target.RoundsMet(); n != 1 {
		t.Errorf("rounds that met it: %d, want 1", n)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
