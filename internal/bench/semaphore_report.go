package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// SemaphoreReport is one run of the semaphore scenario.
type SemaphoreReport struct {
	Started    time.Time     `json:"started"`
	Took       time.Duration `json:"took_ns"`
	NumCPU     int           `json:"num_cpu"`
	Server     ServerInfo    `json:"server"`
	Workers    int           `json:"workers"`
	Processes  int           `json:"processes"`
	Permits    int           `json:"permits"`
	Hold       time.Duration `json:"hold_ns"`
	Duration   time.Duration `json:"duration_ns"`
	Rounds     int           `json:"rounds"`
	LoadBefore string        `json:"load_before,omitempty"`
	LoadAfter  string        `json:"load_after,omitempty"`
	// Results are the semaphore, then the mutex keys.
	Results []SemaphoreResult `json:"results"`
	// Targets: the semaphore's grants ÷ the mutex keys', the semaphore's
	// spread of grants per worker, and the broken lock rules.
	Targets []SemaphoreTarget `json:"targets"`
}

// SemaphoreResult is one series over all rounds: medians of the per-round
// values, the most of the holds at once, totals of the counts.
type SemaphoreResult struct {
	Series string `json:"series"`
	Keys   int    `json:"keys"`

	GrantsPerSec    float64 `json:"grants_per_sec"`
	GrantsPerSecMin float64 `json:"grants_per_sec_min"`
	GrantsPerSecMax float64 `json:"grants_per_sec_max"`

	WaitP50 time.Duration `json:"wait_p50_ns"`
	WaitP99 time.Duration `json:"wait_p99_ns"`
	// WaitMax counts a wait the end of a round cut short.
	WaitMax time.Duration `json:"wait_max_ns"`

	// GrantsPerWorkerMin and Max are the fewest and most grants of one
	// worker in a round; Spread is the largest distance of a worker's
	// grants from the round's mean, as a share of the mean (0.15: every
	// worker within ±15%).
	GrantsPerWorkerMin int     `json:"grants_per_worker_min"`
	GrantsPerWorkerMax int     `json:"grants_per_worker_max"`
	Spread             float64 `json:"spread"`

	Grants int64 `json:"grants"`
	// Limit is how many may hold a key at once: the permits, or 1.
	// HeldAtOnce is the most that did, by the workers' timelines, and
	// OverLimit the grants that began with the limit already held.
	Limit      int   `json:"limit"`
	HeldAtOnce int   `json:"held_at_once"`
	OverLimit  int64 `json:"over_limit"`
	// ServerHeldAtOnce is the most holders the server showed on one key,
	// over ServerSamples samples.
	ServerHeldAtOnce int `json:"server_held_at_once"`
	ServerSamples    int `json:"server_samples"`
	// TokensBackwards counts grants of a one-holder key whose token was not
	// above the previous grant's.
	TokensBackwards int64 `json:"tokens_backwards"`
}

// SemaphoreTarget is one claim of the issue against this run.
type SemaphoreTarget struct {
	Claim string `json:"claim"`
	// Unit says how Want and Got read: a ratio (at least Want), a spread
	// (at most Want, a share of the mean) or a count (at most Want).
	Unit    string    `json:"unit"`
	Want    float64   `json:"want"`
	Got     float64   `json:"got"`
	ByRound []float64 `json:"by_round"`
	Met     bool      `json:"met"`
}

// Units of a SemaphoreTarget.
const (
	unitRatio  = "ratio"
	unitSpread = "spread"
	unitCount  = "count"
)

func (t SemaphoreTarget) meets(v float64) bool {
	if t.Unit == unitRatio {
		return v >= t.Want
	}
	return v <= t.Want
}

// RoundsMet is how many rounds met the target on their own.
func (t SemaphoreTarget) RoundsMet() int {
	n := 0
	for _, v := range t.ByRound {
		if t.meets(v) {
			n++
		}
	}
	return n
}

func (t SemaphoreTarget) format(v float64) string {
	switch t.Unit {
	case unitSpread:
		return fmt.Sprintf("±%.0f%%", 100*v)
	case unitCount:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func (r *SemaphoreReport) summarize(runs []semaphoreRun) {
	bySeries := map[string][]semaphoreRun{}
	for _, run := range runs {
		bySeries[run.series] = append(bySeries[run.series], run)
	}
	for _, s := range semaphoreSeries {
		if len(bySeries[s]) > 0 {
			r.Results = append(r.Results, summarizeSemaphoreRuns(s, r.Permits, bySeries[s]))
		}
	}
	sem, mutex := bySeries[SemaphorePermits], bySeries[SemaphoreMutexKeys]
	ratio := SemaphoreTarget{Claim: fmt.Sprintf("grants/s, semaphore of %d permits ÷ %d mutex keys", r.Permits, r.Permits),
		Unit: unitRatio, Want: semaphoreWantRatio}
	spread := SemaphoreTarget{Claim: "grants per worker on the semaphore, farthest from the mean",
		Unit: unitSpread, Want: semaphoreWantSpread}
	broken := SemaphoreTarget{Claim: fmt.Sprintf("holds past the limit (semaphore %d, mutex key 1; workers' timelines and server samples) "+
		"or tokens backwards", r.Permits), Unit: unitCount}
	var semRates, mutexRates []float64
	for round := range r.Rounds {
		s, okS := roundOf(sem, round)
		m, okM := roundOf(mutex, round)
		if okS && okM {
			ratio.ByRound = append(ratio.ByRound, safeRatio(s.grantsPerSec(), m.grantsPerSec()))
		}
		if okS {
			semRates = append(semRates, s.grantsPerSec())
			spread.ByRound = append(spread.ByRound, unfairness(s.grantsPerWorker()))
		}
		if okM {
			mutexRates = append(mutexRates, m.grantsPerSec())
		}
		var n int64
		for _, x := range []semaphoreRun{s, m} {
			if x.series != "" {
				n += x.violations()
			}
		}
		broken.ByRound = append(broken.ByRound, float64(n))
	}
	ratio.Got = safeRatio(median(semRates), median(mutexRates))
	spread.Got = median(spread.ByRound)
	for _, v := range broken.ByRound {
		broken.Got += v
	}
	for _, t := range []*SemaphoreTarget{&ratio, &spread, &broken} {
		t.Met = t.meets(t.Got)
	}
	r.Targets = []SemaphoreTarget{ratio, spread, broken}
}

// roundOf is the run of runs in round.
func roundOf(runs []semaphoreRun, round int) (semaphoreRun, bool) {
	i := slices.IndexFunc(runs, func(r semaphoreRun) bool { return r.round == round })
	if i < 0 {
		return semaphoreRun{}, false
	}
	return runs[i], true
}

func summarizeSemaphoreRuns(series string, permits int, runs []semaphoreRun) SemaphoreResult {
	res := SemaphoreResult{Series: series, Keys: len(seriesKeys(queueJob{Series: series, Permits: permits})),
		Limit: holdLimit(series, permits)}
	var rates, spreads, mins, maxs []float64
	var p50s, p99s, longest []time.Duration
	for _, r := range runs {
		rates = append(rates, r.grantsPerSec())
		perWorker := r.grantsPerWorker()
		spreads = append(spreads, unfairness(perWorker))
		if len(perWorker) > 0 {
			mins = append(mins, float64(slices.Min(perWorker)))
			maxs = append(maxs, float64(slices.Max(perWorker)))
		}
		waits := r.waits()
		p50s = append(p50s, percentile(waits, 0.50))
		p99s = append(p99s, percentile(waits, 0.99))
		longest = append(longest, r.longest())
		peak, over := r.holdsAtOnce()
		res.HeldAtOnce = max(res.HeldAtOnce, peak)
		res.OverLimit += over
		res.ServerHeldAtOnce = max(res.ServerHeldAtOnce, r.serverPeak)
		res.ServerSamples += r.serverSamples
		res.TokensBackwards += r.tokensBackwards()
		res.Grants += int64(len(r.grants))
	}
	res.GrantsPerSec = median(rates)
	res.GrantsPerSecMin, res.GrantsPerSecMax = slices.Min(rates), slices.Max(rates)
	res.Spread = median(spreads)
	res.GrantsPerWorkerMin, res.GrantsPerWorkerMax = int(median(mins)), int(median(maxs))
	res.WaitP50, res.WaitP99, res.WaitMax = median(p50s), median(p99s), median(longest)
	return res
}

// WriteMarkdown prints the report as Markdown, as the other scenarios do.
func (r *SemaphoreReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Semaphore: %d workers in %d processes, hold %s: one key of %d permits against %d mutex keys\n\n",
		r.Workers, r.Processes, r.Hold, r.Permits, r.Permits)
	writeRunHeader(&b, r.Started, r.Took, r.NumCPU, r.Server, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(&b, "Each series ran %s per round, %d rounds, interleaved; medians over rounds. "+
		"%s: every worker waits for a permit of one key (a waiting Acquire); %s: worker i waits in the fair queue (Acquire) of key i mod %d. "+
		"A Notifier in every process, in both.\n\n", r.Duration, r.Rounds, SemaphorePermits, SemaphoreMutexKeys, r.Permits)
	b.WriteString("| series | keys | grants/s | rounds min–max | wait p50 | wait p99 | longest wait | grants per worker (min–max) | spread | " +
		"holders a key may have | most it had: workers | server (samples) | grants over the limit | tokens backwards |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range r.Results {
		tokens := "–" // a semaphore's holders draw tokens side by side
		if x.Limit == 1 {
			tokens = fmt.Sprintf("%d", x.TokensBackwards)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f–%.0f | %s | %s | %s | %d–%d | ±%.0f%% | %d | %d | %d (%d) | %d | %s |\n",
			x.Series, x.Keys, x.GrantsPerSec, x.GrantsPerSecMin, x.GrantsPerSecMax, ms(x.WaitP50), ms(x.WaitP99), ms(x.WaitMax),
			x.GrantsPerWorkerMin, x.GrantsPerWorkerMax, 100*x.Spread, x.Limit, x.HeldAtOnce, x.ServerHeldAtOnce, x.ServerSamples,
			x.OverLimit, tokens)
	}
	b.WriteString("\n| target | want | got | each round | rounds that met it | met |\n|---|--:|--:|---|--:|---|\n")
	for _, t := range r.Targets {
		want := "≥ " + t.format(t.Want)
		if t.Unit != unitRatio {
			want = "≤ " + t.format(t.Want)
		}
		rounds := make([]string, len(t.ByRound))
		for i, v := range t.ByRound {
			rounds[i] = t.format(v)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d of %d | %s |\n", t.Claim, want, t.format(t.Got),
			strings.Join(rounds, ", "), t.RoundsMet(), len(t.ByRound), yesNo(t.Met))
	}
	fmt.Fprintf(&b, "\nMost a key had: the most leases one key had at a time, from the workers' holds (acquire returned to release called, "+
		"on the one clock of the machine) and from the server's lock tables, sampled every %s; "+
		"grants/s and grants per worker count the grants before each round's end, not the drain's.\n", holderSampleEvery)
	_, err := io.WriteString(w, b.String())
	return err
}
