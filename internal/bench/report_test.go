package bench

import (
	"maps"
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
// by the medians in one round of five reads as such, and the target's
// floor in the same run beside it.
func TestReportShowsTheRatioOfEachRound(t *testing.T) {
	ratios := []Ratio{{Scenario: ScenarioSolo, Workers: 8, LockerOverReference: 1.72,
		LockerOverReferenceByRound: []float64{1.9, 1.72, 1.5}, LockerOverUpdate: 0.41,
		LockerOverUpdateByRound: []float64{0.45, 0.39, 0.41}, LockerOverUpsert: 0.95,
		LockerOverUpsertByRound: []float64{0.93, 1.02, 0.88}, FloorFunctionOverUpsert: 0.97,
		FloorFunctionOverReference: 1.81, FloorFunctionOverUpdate: 0.52}}
	rep := &Report{Ratios: ratios, Targets: targets(ratios)}
	var out strings.Builder
	if err := rep.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| no contention | 8 | 0.95 (0.88–1.02) | 1.72 (1.50–1.90) | 0.41 (0.39–0.45) |",
		"| locker ÷ reference, 8 workers, no contention | ≥ 1.50 | 1.72 | 1.90, 1.72, 1.50 | 3 of 3 | yes | 1.81 |",
		"| locker ÷ one-row UPDATE, 8 workers, no contention | ≥ 0.40 | 0.41 | 0.45, 0.39, 0.41 | 2 of 3 | yes | 0.52 |",
		// A target above its floor reads as out of reach in this run.
		"| locker ÷ upsert, 8 workers, no contention | ≥ 1.00 | 0.95 | 0.93, 1.02, 0.88 | 1 of 3 | **NO** | 0.97 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// Each claim is checked at its own scenario and concurrency, and one the
// run did not measure is left out rather than reported as failed.
func TestTargetsPickTheirScenarioAndConcurrency(t *testing.T) {
	ratios := []Ratio{
		{Scenario: ScenarioSolo, Workers: 8, LockerOverUpsert: 1.1, LockerOverReference: 1.4, LockerOverUpdate: 0.5},
		{Scenario: ScenarioHot, Workers: 8, LockerOverUpsert: 0.9, LockerOverReference: 1.6},
		{Scenario: ScenarioSolo, Workers: 1, LockerOverUpsert: 0.1, LockerOverReference: 0.1, LockerOverUpdate: 0.1},
	}
	got := map[string]bool{}
	for _, tg := range targets(ratios) {
		got[tg.Claim] = tg.Met
	}
	want := map[string]bool{
		"locker ÷ upsert, 8 workers, no contention":         true,
		"locker ÷ upsert, 8 workers, hot keys":              false,
		"locker ÷ one-row UPDATE, 8 workers, no contention": true,
		"locker ÷ reference, 8 workers, no contention":      false,
		"locker ÷ reference, 8 workers, hot keys":           true,
	}
	if !maps.Equal(got, want) {
		t.Errorf("targets met = %v, want %v (no 32-worker claim: the run had no 32 workers)", got, want)
	}
}
