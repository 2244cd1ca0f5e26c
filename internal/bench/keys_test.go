package bench

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A short keys run: both series took whole sets without breaking a lock
// rule, a set at once cost its two statements and one by one two per key,
// every deadlock was reported with one waiter refused, and the report
// carries the verdicts. No timing is asserted.
func TestKeysScenario(t *testing.T) {
	srv := testdb.Server(t)
	rep, err := RunKeys(context.Background(), srv.DSN(""), KeysOptions{Workers: []int{2}, Keys: 3,
		Duration: 150 * time.Millisecond, Rounds: 2, Deadlocks: 2})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Series)
		if r.Granted == 0 || r.Errors != 0 || !r.Violations.Zero() {
			t.Errorf("%s: %d granted, %d errors (%s), violations %+v", r.Series, r.Granted, r.Errors, r.FirstError, r.Violations)
		}
		want := map[string]float64{SeriesSetAtOnce: 2, SeriesSetOneByOne: 6}[r.Series]
		if r.RoundTripsPerCycle != want {
			t.Errorf("%s: %.2f round trips per set, want %.0f", r.Series, r.RoundTripsPerCycle, want)
		}
	}
	if want := []string{SeriesSetAtOnce, SeriesSetOneByOne}; !slices.Equal(names, want) {
		t.Errorf("series = %q, want %q", names, want)
	}
	if len(rep.Deadlocks) != 2 {
		t.Fatalf("deadlock results = %+v, want one per way", rep.Deadlocks)
	}
	for _, d := range rep.Deadlocks {
		if d.Reported != d.Rounds || d.BothRefused != 0 {
			t.Errorf("%s: %d of %d deadlocks reported, %d with both waiters refused", d.Way, d.Reported, d.Rounds, d.BothRefused)
		}
	}
	if len(rep.Targets) != 1 || len(rep.Targets[0].ByRound) != 2 || rep.Targets[0].Got <= 0 {
		t.Errorf("targets = %+v, want one with a ratio per round", rep.Targets)
	}
	var out strings.Builder
	if err := rep.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| set at once | 2 |", "| two waits at once |", "3 keys at once ÷ one by one, 2 workers", "≥ 2.00"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// A mixed-mode set (shared and exclusive keys in one Acquire) is either
// measured as an all-exclusive one is, the set's modes named in its target,
// or, by a build whose locker or server cannot take one yet, refused before
// anything runs, with an error that names the modes and says why.
func TestKeysScenarioMeasuresAMixedSetOrRefusesItClearly(t *testing.T) {
	srv := testdb.Server(t)
	rep, err := RunKeys(context.Background(), srv.DSN(""), KeysOptions{Workers: []int{2}, Keys: 4,
		Modes: []string{"shared", "exclusive"}, Duration: 150 * time.Millisecond, Rounds: 1, Deadlocks: 1})
	if err != nil {
		if !errors.Is(err, ErrMixedSetRefused) || !strings.Contains(err.Error(), "(shared, exclusive, shared, exclusive)") {
			t.Fatalf("RunKeys of a mixed set: %v; want ErrMixedSetRefused naming the modes", err)
		}
		t.Logf("refused as this build must: %v", err)
		return
	}
	for _, r := range rep.Results {
		if r.Granted == 0 || r.Errors != 0 || !r.Violations.Zero() {
			t.Errorf("%s: %d granted, %d errors (%s), violations %+v", r.Series, r.Granted, r.Errors, r.FirstError, r.Violations)
		}
	}
	if want := "4 keys (shared, exclusive, shared, exclusive) at once ÷ one by one, 2 workers"; len(rep.Targets) != 1 || rep.Targets[0].Claim != want {
		t.Errorf("targets = %+v, want one: %q", rep.Targets, want)
	}
}

// Modes a set's keys cannot ask for are refused before anything connects.
func TestKeysScenarioRefusesUnknownModes(t *testing.T) {
	for _, modes := range [][]string{{"exclusive", "read"}, {"semaphore"}, {"semaphore:0"}, {"shared:2"}} {
		_, err := RunKeys(context.Background(), "postgres://nowhere.invalid/db", KeysOptions{Modes: modes})
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("modes %q: %v, want an OptionError", modes, err)
		}
	}
}
