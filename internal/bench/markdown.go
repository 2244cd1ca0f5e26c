package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// WriteMarkdown prints the report as Markdown tables: readable in a
// terminal and pasted as is into BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, took %s. Client: %d CPUs (GOMAXPROCS as default).\n",
		r.Started.UTC().Format(time.RFC3339), r.Took.Round(time.Second), r.NumCPU)
	fmt.Fprintf(&b, "Server: PostgreSQL %s;", r.Server.Version)
	for _, k := range slices.Sorted(maps.Keys(r.Server.Settings)) {
		fmt.Fprintf(&b, " %s=%s", k, r.Server.Settings[k])
	}
	fmt.Fprintf(&b, ".\nMachine load average (1/5/15 min) before: %s, after: %s. Noise: rounds of a series differed by %.0f%% (median of (max−min)/median).\n",
		orDash(r.LoadBefore), orDash(r.LoadAfter), 100*r.Noise())
	fmt.Fprintf(&b, "Each series ran %s per round, %d rounds, interleaved; rates and latencies are medians over rounds. "+
		"Hot keys: every worker on %d keys. Lease TTL %s.\n\n",
		r.Options.Duration, r.Options.Rounds, r.Options.HotKeys, r.Options.TTL)

	if r.Options.RTT > 0 {
		fmt.Fprintf(&b, "**Simulated network:** every statement waited %s before it was sent (--rtt).\n\n", r.Options.RTT)
	}
	b.WriteString("| scenario | workers | series | cycles/s | rounds min–max | p50 | p99 | round trips/cycle | refused/s | round trips/refusal | lock wait | WAL/cycle | CPU/cycle server+client | violations excl/token/lost | errors |\n")
	b.WriteString("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range r.Results {
		viol := "–"
		if x.Checked {
			viol = fmt.Sprintf("%d/%d/%d", x.Violations.Exclusion, x.Violations.TokenOrder, x.Violations.LostLease)
		}
		refused, rtRefused := "–", "–"
		if x.Scenario == ScenarioHot {
			refused = fmt.Sprintf("%.0f", x.RefusedPerSec)
			rtRefused = fmt.Sprintf("%.2f", x.RoundTripsPerRefusal)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %.0f–%.0f | %s | %s | %.2f | %s | %s | %.0f%% | %.0f B | %s | %s | %d |\n",
			x.Scenario, x.Workers, x.Series, x.CyclesPerSec, x.CyclesPerSecMin, x.CyclesPerSecMax,
			ms(x.P50), ms(x.P99), x.RoundTripsPerCycle, refused, rtRefused, 100*x.LockWait, x.WALPerCycle, cpuPair(x), viol, x.Errors)
	}
	for _, x := range r.Results {
		if x.Errors > 0 {
			fmt.Fprintf(&b, "\nErrors in %s, %s, %d workers: %d; the first: %s\n", x.Series, x.Scenario, x.Workers, x.Errors, x.FirstError)
		}
	}
	b.WriteString("\nWhere the workers' backends were while running a statement (pg_stat_activity every 20 ms; CPU = no wait event):\n\n")
	b.WriteString("| scenario | workers | series | top wait events |\n|---|--:|---|---|\n")
	for _, x := range r.Results {
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", x.Scenario, x.Workers, x.Series, strings.Join(x.TopWaits(4), ", "))
	}
	b.WriteString("\nFloors: one statement is one \"cycle\" (floor-commit: a one-row UPDATE, one commit; floor-select: SELECT 1). " +
		"A lock cycle is an acquire and a release: two writes.\n\n")

	b.WriteString("| scenario | workers | locker ÷ upsert | locker ÷ reference | locker ÷ one-row UPDATE | upsert ÷ one-row UPDATE | reference ÷ one-row UPDATE | locker ÷ reference-inline | locker-durable ÷ reference | locker-logged ÷ reference | locker ÷ statements | locker ÷ floor-function | floor-function ÷ upsert |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range r.Ratios {
		fmt.Fprintf(&b, "| %s | %d | %s%s | %s%s | %s%s | %s | %s | %s | %s | %s | %s%s | %s | %s |\n", x.Scenario, x.Workers,
			optRatio(x.LockerOverUpsert), roundRange(x.LockerOverUpsertByRound),
			optRatio(x.LockerOverReference), roundRange(x.LockerOverReferenceByRound),
			optRatio(x.LockerOverUpdate), roundRange(x.LockerOverUpdateByRound),
			optRatio(x.UpsertOverUpdate), optRatio(x.ReferenceOverUpdate),
			optRatio(x.LockerOverReferenceInline), optRatio(x.DurableOverReference), optRatio(x.LoggedOverReference),
			optRatio(x.LockerOverStatements), roundRange(x.LockerOverStatementsByRound),
			optRatio(x.LockerOverFloorFunction), optRatio(x.FloorFunctionOverUpsert))
	}
	b.WriteString("\n(each ratio is cycles/s ÷ cycles/s, medians over rounds; ÷ one-row UPDATE divides by single-row " +
		"UPDATEs/s at the same concurrency, so 0.5 is a cycle as cheap as two of them; " +
		"in brackets, the lowest and highest ratio within one round.)\n\n")

	if len(r.Targets) > 0 {
		b.WriteString("| target | want | got | each round | rounds that met it | met | its floor |\n|---|--:|--:|---|--:|---|--:|\n")
		for _, t := range r.Targets {
			met := "yes"
			if !t.Met {
				met = "**NO**"
			}
			fmt.Fprintf(&b, "| %s | ≥ %.2f | %.2f | %s | %d of %d | %s | %s |\n", t.Claim, t.Want, t.Got,
				joinRatios(t.ByRound), t.RoundsMet(), len(t.ByRound), met, optRatio(t.Floor))
		}
		b.WriteString("\n(its floor: the same ratio with floor-function in the locker's place, in this run; " +
			"a target above its floor is out of reach in this run.)\n\n")
	}
	if k := r.Keepalive; k != nil {
		fmt.Fprintf(&b, "Keepalive: %d locks, TTL %s (renewed every %s), measured %s: %d renewals, %d lost; "+
			"client CPU %s = %.2f%% of one core (target < 5%%).\n",
			k.Locks, k.TTL, k.TTL/3, k.Measured.Round(time.Millisecond), k.Renewals, k.Lost,
			k.CPU.Round(time.Millisecond), k.CPUPercent)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func optRatio(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// roundRange is " (lowest–highest)" of per-round ratios, or "" for fewer
// than two rounds.
func roundRange(v []float64) string {
	if len(v) < 2 {
		return ""
	}
	return fmt.Sprintf(" (%.2f–%.2f)", slices.Min(v), slices.Max(v))
}

func joinRatios(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, ", ")
}

func cpuPair(x Result) string {
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }
	if x.ServerCPUPerCycle == 0 {
		return "– + " + us(x.ClientCPUPerCycle) + " µs"
	}
	return us(x.ServerCPUPerCycle) + " + " + us(x.ClientCPUPerCycle) + " µs"
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
