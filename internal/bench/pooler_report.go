package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// PoolerReport is one run of the pooler scenario.
type PoolerReport struct {
	Started    time.Time     `json:"started"`
	Took       time.Duration `json:"took_ns"`
	NumCPU     int           `json:"num_cpu"`
	Server     ServerInfo    `json:"server"`
	Workers    int           `json:"workers"`
	Duration   time.Duration `json:"duration_ns"`
	Rounds     int           `json:"rounds"`
	LoadBefore string        `json:"load_before,omitempty"`
	LoadAfter  string        `json:"load_after,omitempty"`
	Results    []Result      `json:"results"`
	// LockKept is the locker's cycles/s through PgBouncer ÷ direct;
	// UpdateKept the same for the one-row UPDATE (medians over rounds).
	LockKept          float64   `json:"lock_kept"`
	LockKeptByRound   []float64 `json:"lock_kept_by_round"`
	UpdateKept        float64   `json:"update_kept"`
	UpdateKeptByRound []float64 `json:"update_kept_by_round"`
	// Target is LockKept ÷ UpdateKept against its claim; its ByRound
	// divides the two ratios of each round.
	Target Target `json:"target"`
}

func (r *PoolerReport) summarize(samples []sample) {
	byName := map[string][]sample{}
	for _, s := range samples {
		byName[s.series] = append(byName[s.series], s)
	}
	for _, name := range []string{SeriesLockerDirect, SeriesLockerPooled, SeriesUpdateDirect, SeriesUpdatePooled} {
		if ss := byName[name]; len(ss) > 0 {
			res := summarizeSamples(name, ScenarioSolo, r.Workers, ss)
			res.Checked = name == SeriesLockerDirect || name == SeriesLockerPooled
			r.Results = append(r.Results, res)
		}
	}
	rate := func(name string) float64 {
		i := slices.IndexFunc(r.Results, func(x Result) bool { return x.Series == name })
		if i < 0 {
			return 0
		}
		return r.Results[i].CyclesPerSec
	}
	r.LockKept = safeRatio(rate(SeriesLockerPooled), rate(SeriesLockerDirect))
	r.UpdateKept = safeRatio(rate(SeriesUpdatePooled), rate(SeriesUpdateDirect))
	r.LockKeptByRound = roundRatios(samples, ScenarioSolo, r.Workers, SeriesLockerPooled, SeriesLockerDirect)
	r.UpdateKeptByRound = roundRatios(samples, ScenarioSolo, r.Workers, SeriesUpdatePooled, SeriesUpdateDirect)
	r.Target = Target{Claim: fmt.Sprintf("locker's share kept through PgBouncer ÷ one-row UPDATE's, %d workers", r.Workers),
		Want: poolerWantShareKept, Got: safeRatio(r.LockKept, r.UpdateKept)}
	if len(r.LockKeptByRound) == len(r.UpdateKeptByRound) {
		for i := range r.LockKeptByRound {
			r.Target.ByRound = append(r.Target.ByRound, safeRatio(r.LockKeptByRound[i], r.UpdateKeptByRound[i]))
		}
	}
	r.Target.Met = r.Target.Got >= r.Target.Want
}

func safeRatio(num, den float64) float64 {
	if den == 0 {
		return 0
	}
	return num / den
}

// WriteMarkdown prints the report as Markdown, as BENCHMARKS.md shows it.
func (r *PoolerReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	writeRunHeader(&b, r.Started, r.Took, r.NumCPU, r.Server, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(&b, "%d workers, a key each; PgBouncer in transaction mode with %d server connections; "+
		"pgx default_query_exec_mode=exec on both paths. Each series ran %s per round, %d rounds, interleaved; medians over rounds.\n\n",
		r.Workers, r.Workers, r.Duration, r.Rounds)
	b.WriteString("| series | cycles/s | rounds min–max | p50 | p99 | round trips/cycle | CPU/cycle server+client | violations excl/token/lost | errors |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range r.Results {
		viol := "–"
		if x.Checked {
			viol = fmt.Sprintf("%d/%d/%d", x.Violations.Exclusion, x.Violations.TokenOrder, x.Violations.LostLease)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f–%.0f | %s | %s | %.2f | %s | %s | %d |\n", x.Series, x.CyclesPerSec,
			x.CyclesPerSecMin, x.CyclesPerSecMax, ms(x.P50), ms(x.P99), x.RoundTripsPerCycle, cpuPair(x), viol, x.Errors)
	}
	for _, x := range r.Results {
		if x.Errors > 0 {
			fmt.Fprintf(&b, "\nErrors in %s: %d; the first: %s\n", x.Series, x.Errors, x.FirstError)
		}
	}
	fmt.Fprintf(&b, "\n| through PgBouncer ÷ direct | median | each round |\n|---|--:|---|\n")
	fmt.Fprintf(&b, "| locker | %.2f | %s |\n", r.LockKept, joinRatios(r.LockKeptByRound))
	fmt.Fprintf(&b, "| one-row UPDATE | %.2f | %s |\n\n", r.UpdateKept, joinRatios(r.UpdateKeptByRound))
	t := r.Target
	b.WriteString("| target | want | got | each round | rounds that met it | met |\n|---|--:|--:|---|--:|---|\n")
	fmt.Fprintf(&b, "| %s | ≥ %.2f | %.2f | %s | %d of %d | %s |\n", t.Claim, t.Want, t.Got,
		joinRatios(t.ByRound), t.RoundsMet(), len(t.ByRound), yesNo(t.Met))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRunHeader opens a scenario's report: when the run started and how
// long it took, the client's cores, the server and its settings, and the
// machine's load before and after.
func writeRunHeader(b *strings.Builder, started time.Time, took time.Duration, numCPU int, server ServerInfo, loadBefore, loadAfter string) {
	fmt.Fprintf(b, "Run of %s, took %s. Client: %d CPUs. Server: PostgreSQL %s;", started.UTC().Format(time.RFC3339),
		took.Round(time.Second), numCPU, server.Version)
	for _, k := range slices.Sorted(maps.Keys(server.Settings)) {
		fmt.Fprintf(b, " %s=%s", k, server.Settings[k])
	}
	fmt.Fprintf(b, ".\nMachine load average (1/5/15 min) before: %s, after: %s.\n", orDash(loadBefore), orDash(loadAfter))
}
