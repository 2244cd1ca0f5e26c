package bench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The per-round ratio pairs the two series of the same round, not their
// medians: a run whose rounds disagree shows it.
func TestRoundRatiosPairTheSeriesOfEachRound(t *testing.T) {
	at := func(series string, round int, granted int64) sample {
		return sample{series: series, scenario: ScenarioSolo, workers: 8, round: round,
			elapsed: time.Second, granted: granted}
	}
	samples := []sample{
		at(SeriesReference, 0, 100), at(SeriesLocker, 0, 200),
		at(SeriesReference, 1, 50), at(SeriesLocker, 1, 150),
		at(SeriesLocker, 2, 999),                           // no reference in round 2: no ratio
		at(SeriesReference, 3, 0), at(SeriesLocker, 3, 10), // nothing to divide by
		at(SeriesReference, 4, 100), at(SeriesLocker, 4, 120),
		{series: SeriesLocker, scenario: ScenarioHot, workers: 8, round: 4, elapsed: time.Second, granted: 1},
		{series: SeriesLocker, scenario: ScenarioSolo, workers: 1, round: 4, elapsed: time.Second, granted: 1},
	}
	got := roundRatios(samples, ScenarioSolo, 8, SeriesLocker, SeriesReference)
	if want := []float64{2, 3, 1.2}; !slices.Equal(got, want) {
		t.Errorf("per-round ratios = %v, want %v", got, want)
	}
	tg := Target{Want: 1.7, ByRound: got}
	if n := tg.RoundsMet(); n != 2 {
		t.Errorf("rounds that met 1.7 in %v: %d, want 2", got, n)
	}
}

// The report shows each round's ratio next to the verdict, so a target met
// by the medians in one round of five reads as such.
func TestReportShowsTheRatioOfEachRound(t *testing.T) {
	ratios := []Ratio{{Scenario: ScenarioSolo, Workers: 8, LockerOverReference: 1.72,
		LockerOverReferenceByRound: []float64{1.9, 1.72, 1.5}, LockerOverCommitFloor: 1,
		LockerOverCommitFloorByRound: []float64{1.1, 0.9, 1},
		LockerOverStatements:         0.95, LockerOverStatementsByRound: []float64{0.93, 0.97, 0.88}}}
	rep := &Report{Ratios: ratios, Targets: targets(ratios)}
	var out strings.Builder
	if err := rep.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| no contention | 8 | 1.72 (1.50–1.90) |",
		"| locker ÷ reference, 8 workers, no contention | ≥ 1.70 | 1.72 | 1.90, 1.72, 1.50 | 2 of 3 | yes |",
		"| locker ÷ commit floor, 8 workers, no contention | ≥ 0.80 | 1.00 | 1.10, 0.90, 1.00 | 3 of 3 | yes |",
		"| locker (functions) ÷ statements, 8 workers, no contention | ≥ 0.90 | 0.95 | 0.93, 0.97, 0.88 | 2 of 3 | yes |",
		"| 0.95 (0.88–0.97) |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
