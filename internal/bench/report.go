package bench

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Report is one benchmark run.
type Report struct {
	Started   time.Time        `json:"started"`
	Took      time.Duration    `json:"took_ns"`
	NumCPU    int              `json:"num_cpu"`
	Server    ServerInfo       `json:"server"`
	Options   OptionsSummary   `json:"options"`
	Results   []Result         `json:"results"`
	Ratios    []Ratio          `json:"ratios"`
	Targets   []Target         `json:"targets"`
	Keepalive *KeepaliveResult `json:"keepalive,omitempty"`
	// LoadBefore and LoadAfter are /proc/loadavg at the start and end: how
	// busy the machine was with other work (empty where unavailable).
	LoadBefore string `json:"load_before,omitempty"`
	LoadAfter  string `json:"load_after,omitempty"`
}

// Noise is the median, over series, of the rounds' spread (max − min) ÷
// median: 0.1 means rounds of one series typically differed by 10%.
func (r *Report) Noise() float64 {
	var spreads []float64
	for _, x := range r.Results {
		spreads = append(spreads, x.Spread())
	}
	return median(spreads)
}

// OptionsSummary is what a reader needs to interpret the numbers.
type OptionsSummary struct {
	Workers  []int         `json:"workers"`
	Duration time.Duration `json:"duration_ns"`
	Rounds   int           `json:"rounds"`
	HotKeys  int           `json:"hot_keys"`
	TTL      time.Duration `json:"ttl_ns"`
	RTT      time.Duration `json:"rtt_ns,omitempty"`
}

func summarize(o Options) OptionsSummary {
	return OptionsSummary{Workers: o.Workers, Duration: o.Duration, Rounds: o.Rounds, HotKeys: o.HotKeys, TTL: o.TTL, RTT: o.RTT}
}

// Result is one series at one concurrency in one scenario, over all rounds:
// rates and latencies are medians of the per-round values; counts are totals.
type Result struct {
	Series   string `json:"series"`
	Scenario string `json:"scenario"`
	Workers  int    `json:"workers"`

	CyclesPerSec    float64 `json:"cycles_per_sec"` // granted acquire+release cycles (floors: statements)
	CyclesPerSecMin float64 `json:"cycles_per_sec_min"`
	CyclesPerSecMax float64 `json:"cycles_per_sec_max"`
	RefusedPerSec   float64 `json:"refused_per_sec"` // attempts that found the key held

	P50 time.Duration `json:"p50_ns"` // latency of a granted cycle
	P99 time.Duration `json:"p99_ns"`

	RoundTripsPerCycle   float64 `json:"round_trips_per_cycle"`
	RoundTripsPerRefusal float64 `json:"round_trips_per_refusal"`

	Granted int64 `json:"granted"`
	Refused int64 `json:"refused"`
	// LockWait is the share of the workers' backends seen waiting on a
	// heavyweight (row or transaction) lock, sampled from pg_stat_activity.
	LockWait float64 `json:"lock_wait"`
	// WaitEvents is where the workers' backends were seen, as shares of
	// all samples of running statements ("CPU": no wait event).
	WaitEvents map[string]float64 `json:"wait_events"`
	// WALPerCycle is WAL bytes written per granted cycle (refused attempts'
	// WAL included).
	WALPerCycle float64 `json:"wal_per_cycle"`
	// ServerCPUPerCycle and ClientCPUPerCycle are CPU time per granted
	// cycle (refused attempts' CPU included): what decides throughput when
	// the cores are the bottleneck. ServerCPUPerCycle is 0 when the server's
	// processes are not visible from here.
	ServerCPUPerCycle time.Duration `json:"server_cpu_per_cycle_ns"`
	ClientCPUPerCycle time.Duration `json:"client_cpu_per_cycle_ns"`

	Errors     int64      `json:"errors"`
	FirstError string     `json:"first_error,omitempty"`
	Violations Violations `json:"violations"`
	// Checked is whether Violations were counted (lock series only).
	Checked bool `json:"checked"`
}

// Spread is how far the rounds' rates were from each other, relative to
// the median: a measure of how noisy the run was.
func (r Result) Spread() float64 {
	if r.CyclesPerSec == 0 {
		return 0
	}
	return (r.CyclesPerSecMax - r.CyclesPerSecMin) / r.CyclesPerSec
}

func aggregate(samples []sample, opts Options) []Result {
	type id struct {
		series, scenario string
		workers          int
	}
	groups := map[id][]sample{}
	var order []id
	for _, s := range samples {
		k := id{s.series, s.scenario, s.workers}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	var out []Result
	for _, k := range order {
		out = append(out, summarizeSamples(k.series, k.scenario, k.workers, groups[k]))
	}
	scenarioRank := map[string]int{ScenarioSolo: 0, ScenarioHot: 1}
	seriesRank := map[string]int{SeriesReference: 0, SeriesReferenceInline: 1, SeriesUpsert: 2, SeriesLocker: 3,
		SeriesLockerDurable: 4, SeriesLockerLogged: 5, SeriesStatements: 6, SeriesFloorFunction: 7, SeriesCommitFloor: 8, SeriesNetFloor: 9}
	slices.SortStableFunc(out, func(a, b Result) int {
		return cmp.Or(cmp.Compare(scenarioRank[a.Scenario], scenarioRank[b.Scenario]),
			cmp.Compare(a.Workers, b.Workers),
			cmp.Compare(seriesRank[a.Series], seriesRank[b.Series]))
	})
	return out
}

func summarizeSamples(series, scenario string, workers int, ss []sample) Result {
	r := Result{Series: series, Scenario: scenario, Workers: workers,
		Checked: checked(series)}
	var rates, refusals []float64
	var p50s, p99s []time.Duration
	var rtG, rtR int64
	waits := lockWaits{events: map[string]int64{}}
	var wal int64
	var serverCPU, clientCPU time.Duration
	serverSeen := true
	for _, s := range ss {
		secs := s.elapsed.Seconds()
		rates = append(rates, float64(s.granted)/secs)
		refusals = append(refusals, float64(s.refused)/secs)
		lat := slices.Clone(s.latencies)
		slices.Sort(lat)
		p50s = append(p50s, percentile(lat, 0.50))
		p99s = append(p99s, percentile(lat, 0.99))
		r.Granted += s.granted
		r.Refused += s.refused
		rtG += s.rtGranted
		rtR += s.rtRefused
		waits.samples += s.waiting.samples
		waits.waiting += s.waiting.waiting
		waits.active += s.waiting.active
		for e, n := range s.waiting.events {
			waits.events[e] += n
		}
		wal += s.walBytes
		serverCPU += s.serverCPU
		clientCPU += s.clientCPU
		serverSeen = serverSeen && s.serverCPU > 0
		r.Errors += s.errors
		if r.FirstError == "" && s.firstErr != nil {
			r.FirstError = s.firstErr.Error()
		}
		r.Violations = r.Violations.add(s.violations)
	}
	r.CyclesPerSec = median(rates)
	r.CyclesPerSecMin, r.CyclesPerSecMax = slices.Min(rates), slices.Max(rates)
	r.RefusedPerSec = median(refusals)
	r.P50, r.P99 = median(p50s), median(p99s)
	if r.Granted > 0 {
		r.RoundTripsPerCycle = float64(rtG) / float64(r.Granted)
		r.WALPerCycle = float64(wal) / float64(r.Granted)
		r.ClientCPUPerCycle = clientCPU / time.Duration(r.Granted)
		if serverSeen {
			r.ServerCPUPerCycle = serverCPU / time.Duration(r.Granted)
		}
	}
	if r.Refused > 0 {
		r.RoundTripsPerRefusal = float64(rtR) / float64(r.Refused)
	}
	if waits.samples > 0 {
		r.LockWait = float64(waits.waiting) / float64(waits.samples*int64(workers))
	}
	if waits.active > 0 {
		r.WaitEvents = map[string]float64{}
		for e, n := range waits.events {
			r.WaitEvents[e] = float64(n) / float64(waits.active)
		}
	}
	return r
}

// percentile of sorted durations, nearest rank; 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median of v; 0 for none, like percentile.
func median[T ~float64 | ~int64](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return s[len(s)/2-1] + (s[len(s)/2]-s[len(s)/2-1])/2
}

// Ratio compares the locker with the peers' designs and with the one-row
// UPDATE floor at one concurrency in one scenario. Each ratio is granted
// cycles/s ÷ granted cycles/s (each the median over rounds); ByRound is the
// same ratio within each round, in round order: how far the ratio itself
// moves with the machine.
type Ratio struct {
	Scenario string `json:"scenario"`
	Workers  int    `json:"workers"`
	// LockerOverUpsert is the locker ÷ the keep-row upsert (upsert.go).
	LockerOverUpsert        float64   `json:"locker_over_upsert"`
	LockerOverUpsertByRound []float64 `json:"locker_over_upsert_by_round"`
	// LockerOverReference is the locker ÷ the reference design.
	LockerOverReference        float64   `json:"locker_over_reference"`
	LockerOverReferenceByRound []float64 `json:"locker_over_reference_by_round"`
	// LockerOverUpdate is the locker's cycles/s ÷ one-row UPDATEs/s
	// (floor-commit) at the same concurrency without contention: a cycle
	// writes twice, so 0.5 is a cycle as cheap as two bare UPDATEs. Only
	// for the no-contention scenario, as are the upsert's and reference's.
	LockerOverUpdate        float64   `json:"locker_over_update,omitempty"`
	LockerOverUpdateByRound []float64 `json:"locker_over_update_by_round,omitempty"`
	UpsertOverUpdate        float64   `json:"upsert_over_update,omitempty"`
	ReferenceOverUpdate     float64   `json:"reference_over_update,omitempty"`
	// The variants, each ÷ the reference (LockerOverReferenceInline: the
	// default locker ÷ the reference-inline variant).
	LockerOverReferenceInline float64 `json:"locker_over_reference_inline"`
	DurableOverReference      float64 `json:"locker_durable_over_reference"`
	LoggedOverReference       float64 `json:"locker_logged_over_reference"`
	// LockerOverStatements is the locker (through the protocol functions)
	// ÷ the protocol sent as statements without the queue and epoch checks
	// (statements.go): what the function call plus those checks cost.
	LockerOverStatements        float64   `json:"locker_over_statements"`
	LockerOverStatementsByRound []float64 `json:"locker_over_statements_by_round"`
	// FloorFunctionOverUpsert is the function floor (floorfunc.go) ÷ the
	// upsert: how near the upsert a protocol whose writes all go through
	// SECURITY DEFINER functions can come at all.
	FloorFunctionOverUpsert float64 `json:"floor_function_over_upsert"`
	// FloorFunctionOverReference and FloorFunctionOverUpdate are the
	// function floor in the locker's place in the other targets' ratios.
	FloorFunctionOverReference float64 `json:"floor_function_over_reference"`
	FloorFunctionOverUpdate    float64 `json:"floor_function_over_update,omitempty"`
	// LockerOverFloorFunction is the locker ÷ the function floor: what the
	// protocol's own work costs beyond the function calls.
	LockerOverFloorFunction float64 `json:"locker_over_floor_function"`
}

func ratios(results []Result, samples []sample) []Ratio {
	find := func(series, scenario string, w int) (Result, bool) {
		i := slices.IndexFunc(results, func(r Result) bool {
			return r.Series == series && r.Scenario == scenario && r.Workers == w
		})
		if i < 0 {
			return Result{}, false
		}
		return results[i], true
	}
	var out []Ratio
	for _, r := range results {
		if r.Series != SeriesLocker {
			continue
		}
		ratio := Ratio{Scenario: r.Scenario, Workers: r.Workers}
		over := func(num, den string) float64 {
			a, okA := find(num, r.Scenario, r.Workers)
			b, okB := find(den, r.Scenario, r.Workers)
			if !okA || !okB || b.CyclesPerSec == 0 {
				return 0
			}
			return a.CyclesPerSec / b.CyclesPerSec
		}
		byRound := func(den string) []float64 {
			return roundRatios(samples, r.Scenario, r.Workers, SeriesLocker, den)
		}
		ratio.LockerOverUpsert, ratio.LockerOverUpsertByRound = over(SeriesLocker, SeriesUpsert), byRound(SeriesUpsert)
		ratio.LockerOverReference, ratio.LockerOverReferenceByRound = over(SeriesLocker, SeriesReference), byRound(SeriesReference)
		ratio.LockerOverReferenceInline = over(SeriesLocker, SeriesReferenceInline)
		ratio.DurableOverReference = over(SeriesLockerDurable, SeriesReference)
		ratio.LoggedOverReference = over(SeriesLockerLogged, SeriesReference)
		ratio.LockerOverStatements, ratio.LockerOverStatementsByRound = over(SeriesLocker, SeriesStatements), byRound(SeriesStatements)
		ratio.FloorFunctionOverUpsert = over(SeriesFloorFunction, SeriesUpsert)
		ratio.FloorFunctionOverReference = over(SeriesFloorFunction, SeriesReference)
		ratio.LockerOverFloorFunction = over(SeriesLocker, SeriesFloorFunction)
		if r.Scenario == ScenarioSolo {
			ratio.LockerOverUpdate, ratio.LockerOverUpdateByRound = over(SeriesLocker, SeriesCommitFloor), byRound(SeriesCommitFloor)
			ratio.UpsertOverUpdate = over(SeriesUpsert, SeriesCommitFloor)
			ratio.FloorFunctionOverUpdate = over(SeriesFloorFunction, SeriesCommitFloor)
			ratio.ReferenceOverUpdate = over(SeriesReference, SeriesCommitFloor)
		}
		out = append(out, ratio)
	}
	return out
}

// roundRatios is num's rate ÷ den's in each round where both ran, in
// round order. A round runs every series once, seconds apart, so the two
// rates of one round saw much the same machine; the spread of these ratios
// is the spread a single short run of the comparison would show.
func roundRatios(samples []sample, scenario string, workers int, num, den string) []float64 {
	rates := map[string]map[int]float64{num: {}, den: {}}
	rounds := 0
	for _, s := range samples {
		if s.scenario != scenario || s.workers != workers || rates[s.series] == nil || s.elapsed <= 0 {
			continue
		}
		rates[s.series][s.round] = float64(s.granted) / s.elapsed.Seconds()
		rounds = max(rounds, s.round+1)
	}
	var out []float64
	for round := range rounds {
		n, okN := rates[num][round]
		d, okD := rates[den][round]
		if okN && okD && d > 0 {
			out = append(out, n/d)
		}
	}
	return out
}

// Target is one of the performance claims, checked against this run.
type Target struct {
	Claim string  `json:"claim"`
	Want  float64 `json:"want"` // at least
	Got   float64 `json:"got"`
	Met   bool    `json:"met"`
	// ByRound is the ratio within each round: a target met by the medians
	// but in few rounds is met by this run, not by every run.
	ByRound []float64 `json:"by_round"`
	// Floor is the same ratio with the function floor (floorfunc.go) in
	// the locker's place, in the same run: the most any protocol that keeps
	// the lock contract could get. A target above it is out of reach in
	// this run. Zero when the target has no such floor.
	Floor float64 `json:"floor,omitempty"`
}

// RoundsMet is how many rounds met the target on their own.
func (t Target) RoundsMet() int {
	n := 0
	for _, v := range t.ByRound {
		if v >= t.Want {
			n++
		}
	}
	return n
}

// speedTargets are the claims (BENCHMARKS.md), each a ratio of one
// scenario at one concurrency.
var speedTargets = []struct {
	claim    string
	scenario string
	workers  int
	want     float64
	ratio    func(Ratio) (float64, []float64)
	floor    func(Ratio) float64
}{
	{"locker ÷ upsert, 8 workers, no contention", ScenarioSolo, 8, 1.0, lockerOverUpsert, floorOverUpsert},
	{"locker ÷ upsert, 32 workers, no contention", ScenarioSolo, 32, 1.0, lockerOverUpsert, floorOverUpsert},
	{"locker ÷ upsert, 8 workers, hot keys", ScenarioHot, 8, 1.0, lockerOverUpsert, floorOverUpsert},
	{"locker ÷ one-row UPDATE, 8 workers, no contention", ScenarioSolo, 8, 0.4,
		func(r Ratio) (float64, []float64) { return r.LockerOverUpdate, r.LockerOverUpdateByRound },
		func(r Ratio) float64 { return r.FloorFunctionOverUpdate }},
	{"locker ÷ reference, 8 workers, no contention", ScenarioSolo, 8, 1.5, lockerOverReference, floorOverReference},
	{"locker ÷ reference, 8 workers, hot keys", ScenarioHot, 8, 1.5, lockerOverReference, floorOverReference},
}

func floorOverUpsert(r Ratio) float64    { return r.FloorFunctionOverUpsert }
func floorOverReference(r Ratio) float64 { return r.FloorFunctionOverReference }

func lockerOverUpsert(r Ratio) (float64, []float64) {
	return r.LockerOverUpsert, r.LockerOverUpsertByRound
}

func lockerOverReference(r Ratio) (float64, []float64) {
	return r.LockerOverReference, r.LockerOverReferenceByRound
}

// targets checks the claims this run measured (a claim at a concurrency
// the run left out is not listed).
func targets(rs []Ratio) []Target {
	var out []Target
	for _, st := range speedTargets {
		i := slices.IndexFunc(rs, func(r Ratio) bool { return r.Scenario == st.scenario && r.Workers == st.workers })
		if i < 0 {
			continue
		}
		got, byRound := st.ratio(rs[i])
		out = append(out, Target{Claim: st.claim, Want: st.want, Got: got, Met: got >= st.want, ByRound: byRound,
			Floor: st.floor(rs[i])})
	}
	return out
}

// TopWaits names the most frequent wait events, most frequent first.
func (r Result) TopWaits(n int) []string {
	names := slices.Collect(maps.Keys(r.WaitEvents))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(r.WaitEvents[b], r.WaitEvents[a]), cmp.Compare(a, b))
	})
	var out []string
	for _, e := range names[:min(n, len(names))] {
		out = append(out, fmt.Sprintf("%s %.0f%%", e, 100*r.WaitEvents[e]))
	}
	return out
}
