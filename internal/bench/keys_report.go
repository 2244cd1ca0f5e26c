package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// KeysReport is one run of the keys scenario.
type KeysReport struct {
	Started    time.Time     `json:"started"`
	Took       time.Duration `json:"took_ns"`
	NumCPU     int           `json:"num_cpu"`
	Server     ServerInfo    `json:"server"`
	Keys       int           `json:"keys"`
	Modes      string        `json:"modes"` // of the set's keys, in order
	Mixed      bool          `json:"mixed"` // some are not exclusive
	Duration   time.Duration `json:"duration_ns"`
	Rounds     int           `json:"rounds"`
	LoadBefore string        `json:"load_before,omitempty"`
	LoadAfter  string        `json:"load_after,omitempty"`
	// Results are both series at each concurrency; a cycle is a whole set
	// taken and given back.
	Results   []Result         `json:"results"`
	Deadlocks []DeadlockResult `json:"deadlocks"`
	// Targets: the set at once ÷ one by one, per concurrency; and the
	// slowest deadlock report against its limit (Want and Got in seconds,
	// Met when Got ≤ Want).
	Targets  []Target `json:"targets"`
	Deadline Target   `json:"deadlock_target"`
}

func (r *KeysReport) summarize(samples []sample, workers []int) {
	for _, w := range workers {
		for _, name := range []string{SeriesSetAtOnce, SeriesSetOneByOne} {
			var ss []sample
			for _, s := range samples {
				if s.series == name && s.workers == w {
					ss = append(ss, s)
				}
			}
			if len(ss) > 0 {
				r.Results = append(r.Results, summarizeSamples(name, ScenarioSolo, w, ss))
			}
		}
		rate := func(name string) float64 {
			i := slices.IndexFunc(r.Results, func(x Result) bool { return x.Series == name && x.Workers == w })
			if i < 0 {
				return 0
			}
			return r.Results[i].CyclesPerSec
		}
		t := Target{Claim: fmt.Sprintf("%d keys%s at once ÷ one by one, %d workers", r.Keys, r.mix(), w), Want: keysWantRatio,
			Got:     safeRatio(rate(SeriesSetAtOnce), rate(SeriesSetOneByOne)),
			ByRound: roundRatios(samples, ScenarioSolo, w, SeriesSetAtOnce, SeriesSetOneByOne)}
		t.Met = t.Got >= t.Want
		r.Targets = append(r.Targets, t)
	}
}

// mix names the set's modes when they are mixed: " (shared, exclusive, …)".
func (r *KeysReport) mix() string {
	if !r.Mixed {
		return ""
	}
	return " (" + r.Modes + ")"
}

func (r *KeysReport) judgeDeadlocks() {
	var worst time.Duration
	for _, d := range r.Deadlocks {
		worst = max(worst, d.Max)
	}
	r.Deadline = Target{Claim: "slowest deadlock report after the closing wait, seconds",
		Want: deadlockWantMax.Seconds(), Got: worst.Seconds()}
	r.Deadline.Met = worst <= deadlockWantMax
	for _, d := range r.Deadlocks {
		r.Deadline.Met = r.Deadline.Met && d.BothRefused == 0 && d.Reported == d.Rounds
	}
}

// WriteMarkdown prints the report as Markdown, as BENCHMARKS.md shows it.
func (r *KeysReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	writeRunHeader(&b, r.Started, r.Took, r.NumCPU, r.Server, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(&b, "Sets of %d keys (%s), each worker on keys of its own; a cycle takes the whole set and gives it back. "+
		"Each series ran %s per round, %d rounds, interleaved; medians over rounds.\n\n", r.Keys, r.Modes, r.Duration, r.Rounds)
	b.WriteString("| series | workers | sets/s | rounds min–max | p50 | p99 | round trips/set | WAL/set | CPU/set server+client | violations excl/token/lost | errors |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range r.Results {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f–%.0f | %s | %s | %.2f | %.0f B | %s | %d/%d/%d | %d |\n", x.Series, x.Workers,
			x.CyclesPerSec, x.CyclesPerSecMin, x.CyclesPerSecMax, ms(x.P50), ms(x.P99), x.RoundTripsPerCycle,
			x.WALPerCycle, cpuPair(x), x.Violations.Exclusion, x.Violations.TokenOrder, x.Violations.LostLease, x.Errors)
	}
	for _, x := range r.Results {
		if x.Errors > 0 {
			fmt.Fprintf(&b, "\nErrors in %s, %d workers: %d; the first: %s\n", x.Series, x.Workers, x.Errors, x.FirstError)
		}
	}
	b.WriteString("\n| deadlock closed | rounds | reported | both refused | p50 | max |\n|---|--:|--:|--:|--:|--:|\n")
	for _, d := range r.Deadlocks {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s |\n", d.Way, d.Rounds, d.Reported, d.BothRefused, ms(d.P50), ms(d.Max))
	}
	b.WriteString("\n| target | want | got | each round | rounds that met it | met |\n|---|--:|--:|---|--:|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | ≥ %.2f | %.2f | %s | %d of %d | %s |\n", t.Claim, t.Want, t.Got,
			joinRatios(t.ByRound), t.RoundsMet(), len(t.ByRound), yesNo(t.Met))
	}
	d := r.Deadline
	fmt.Fprintf(&b, "| %s | ≤ %.2f | %.3f | – | – | %s |\n", d.Claim, d.Want, d.Got, yesNo(d.Met))
	_, err := io.WriteString(w, b.String())
	return err
}

func yesNo(met bool) string {
	if met {
		return "yes"
	}
	return "**NO**"
}
