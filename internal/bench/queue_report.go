package bench

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// QueueReport is one run of the queue scenario.
type QueueReport struct {
	Started   time.Time     `json:"started"`
	Took      time.Duration `json:"took_ns"`
	Server    ServerInfo    `json:"server"`
	Processes int           `json:"processes"`
	Hold      time.Duration `json:"hold_ns"`
	Duration  time.Duration `json:"duration_ns"`
	Rounds    int           `json:"rounds"`
	Results   []QueueResult `json:"results"`
}

// QueueResult is one series at one queue length, over all rounds: medians
// of the per-round values, and totals of the counts.
type QueueResult struct {
	Series  string `json:"series"`
	Waiters int    `json:"waiters"`

	HandOffsPerSec float64 `json:"hand_offs_per_sec"`
	// TransactionsPerHandOff counts every transaction the waiters ran
	// (grants, releases, waiting bookkeeping, retries) per grant.
	TransactionsPerHandOff float64 `json:"transactions_per_hand_off"`
	// BackendTransactionsPerHandOff counts every transaction the database's
	// backends ran per grant (queue_backend.go): the waiters', the
	// Notifiers', and the listening backends' reads of the notification
	// queue. -1: not measured (the server could not be observed).
	BackendTransactionsPerHandOff float64 `json:"backend_transactions_per_hand_off"`
	// Listeners is how many connections LISTENed (one per process in the
	// locker and notify floor series).
	Listeners int           `json:"listeners"`
	WaitP50   time.Duration `json:"wait_p50_ns"`
	WaitP99   time.Duration `json:"wait_p99_ns"`
	// WaitMax counts waits the end of a round cut short (a waiter still
	// queued had waited at least that long).
	WaitMax time.Duration `json:"wait_max_ns"`
	// GrantsPerWaiterMin and Max are the fewest and most grants one waiter
	// got in a round; Unfairness is the largest distance of a waiter's
	// grants from the round's mean, as a share of the mean (0.15: every
	// waiter within ±15%).
	GrantsPerWaiterMin int     `json:"grants_per_waiter_min"`
	GrantsPerWaiterMax int     `json:"grants_per_waiter_max"`
	Unfairness         float64 `json:"unfairness"`

	// ReleaseP50 is the release call's round trip (median); HandOverP50
	// the time from one holder's release returning to the next holder's
	// hold (median over consecutive grants; on one connection, the floors,
	// the next grant's round trip): a hand-over costs the hold and both.
	ReleaseP50  time.Duration `json:"release_p50_ns"`
	HandOverP50 time.Duration `json:"hand_over_p50_ns"`

	Grants int64 `json:"grants"`
	// Overlaps counts consecutive grants whose holds overlapped (the next
	// acquire returned before the previous release was called) or whose
	// tokens did not increase: broken mutual exclusion or fencing. Must be 0.
	Overlaps int64 `json:"overlaps"`
}

// queueRun is one series at one queue length in one round.
type queueRun struct {
	series          string
	waiters         int
	duration        time.Duration
	stop            time.Time
	grants          []queueGrant // including the drain's, after stop
	grantsPerWaiter []int
	transactions    int64
	unfinishedWait  time.Duration
	// backendTransactions is the run's count (-1: not measured); listeners
	// the connections that LISTENed.
	backendTransactions int64
	listeners           int
}

func newQueueRun(job queueJob, waiters int, results []queueWorkerResult) queueRun {
	r := queueRun{series: job.Series, waiters: waiters, duration: job.Stop.Sub(job.Start), stop: job.Stop,
		backendTransactions: -1}
	for _, res := range results {
		r.grants = append(r.grants, res.Grants...)
		for _, n := range res.GrantsPerWaiter {
			r.grantsPerWaiter = append(r.grantsPerWaiter, n)
		}
		r.transactions += res.Transactions
		r.unfinishedWait = max(r.unfinishedWait, time.Duration(res.UnfinishedWaitNs))
	}
	return r
}

// handOffsPerSec counts the grants made before the stop, not the drain's.
func (r queueRun) handOffsPerSec() float64 {
	n := 0
	for _, g := range r.grants {
		if g.Acquired < r.stop.UnixNano() {
			n++
		}
	}
	return float64(n) / r.duration.Seconds()
}

// longest is the longest wait of the run, counting waits still unfinished
// when it ended: a starved waiter's wait is at least that long.
func (r queueRun) longest() time.Duration {
	m := r.unfinishedWait
	for _, g := range r.grants {
		m = max(m, time.Duration(g.WaitNs))
	}
	return m
}

// overlaps orders the grants by when they were acquired and counts pairs
// that break mutual exclusion (a hold began before the previous one ended)
// or fencing (a later grant with a token not larger than the previous).
func (r queueRun) overlaps() int64 {
	gs := slices.Clone(r.grants)
	slices.SortFunc(gs, func(a, b queueGrant) int { return cmp.Compare(a.Acquired, b.Acquired) })
	var n int64
	for i := 1; i < len(gs); i++ {
		prev, next := gs[i-1], gs[i]
		if next.Acquired < prev.Releasing || (next.Token != 0 && next.Token <= prev.Token) {
			n++
		}
	}
	return n
}

// handOverTimes are, over consecutive grants, the release calls' round
// trips and the times from a release's return to the next hold, sorted.
func (r queueRun) handOverTimes() (release, handOver []time.Duration) {
	gs := slices.Clone(r.grants)
	slices.SortFunc(gs, func(a, b queueGrant) int { return cmp.Compare(a.Acquired, b.Acquired) })
	for i, g := range gs {
		release = append(release, time.Duration(g.Released-g.Releasing))
		if i > 0 {
			handOver = append(handOver, time.Duration(g.Acquired-gs[i-1].Released))
		}
	}
	slices.Sort(release)
	slices.Sort(handOver)
	return release, handOver
}

// unfairness is the largest distance of a waiter's grant count from the
// mean, as a share of the mean.
func unfairness(counts []int) float64 {
	if len(counts) == 0 {
		return 0
	}
	var sum int
	for _, c := range counts {
		sum += c
	}
	mean := float64(sum) / float64(len(counts))
	if mean == 0 {
		return 0
	}
	var worst float64
	for _, c := range counts {
		worst = max(worst, math.Abs(float64(c)-mean)/mean)
	}
	return worst
}

func summarizeQueue(runs []queueRun) []QueueResult {
	type id struct {
		series  string
		waiters int
	}
	groups := map[id][]queueRun{}
	var order []id
	for _, r := range runs {
		k := id{r.series, r.waiters}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.SortStableFunc(order, func(a, b id) int {
		return cmp.Or(cmp.Compare(a.waiters, b.waiters),
			cmp.Compare(slices.Index(queueSeries, a.series), slices.Index(queueSeries, b.series)))
	})
	var out []QueueResult
	for _, k := range order {
		out = append(out, summarizeQueueRuns(k.series, k.waiters, groups[k]))
	}
	return out
}

func summarizeQueueRuns(series string, waiters int, runs []queueRun) QueueResult {
	res := QueueResult{Series: series, Waiters: waiters}
	var rates, txns, backend, unfair, mins, maxs []float64
	var p50s, p99s, maxWaits, releases, handOvers []time.Duration
	for _, r := range runs {
		rates = append(rates, r.handOffsPerSec())
		if n := len(r.grants); n > 0 {
			txns = append(txns, float64(r.transactions)/float64(n))
			if r.backendTransactions >= 0 {
				backend = append(backend, float64(r.backendTransactions)/float64(n))
			}
		}
		res.Listeners = r.listeners
		waits := make([]time.Duration, 0, len(r.grants))
		for _, g := range r.grants {
			waits = append(waits, time.Duration(g.WaitNs))
		}
		slices.Sort(waits)
		p50s = append(p50s, percentile(waits, 0.50))
		p99s = append(p99s, percentile(waits, 0.99))
		maxWaits = append(maxWaits, r.longest())
		release, handOver := r.handOverTimes()
		releases = append(releases, percentile(release, 0.5))
		handOvers = append(handOvers, percentile(handOver, 0.5))
		unfair = append(unfair, unfairness(r.grantsPerWaiter))
		if len(r.grantsPerWaiter) > 0 {
			mins = append(mins, float64(slices.Min(r.grantsPerWaiter)))
			maxs = append(maxs, float64(slices.Max(r.grantsPerWaiter)))
		}
		res.Grants += int64(len(r.grants))
		res.Overlaps += r.overlaps()
	}
	res.HandOffsPerSec = median(rates)
	res.TransactionsPerHandOff = median(txns)
	res.BackendTransactionsPerHandOff = -1
	if len(backend) > 0 {
		res.BackendTransactionsPerHandOff = median(backend)
	}
	res.WaitP50 = median(p50s)
	res.WaitP99 = median(p99s)
	res.WaitMax = median(maxWaits)
	res.ReleaseP50 = median(releases)
	res.HandOverP50 = median(handOvers)
	res.Unfairness = median(unfair)
	res.GrantsPerWaiterMin = int(median(mins))
	res.GrantsPerWaiterMax = int(median(maxs))
	return res
}

// WriteMarkdown prints the report as BENCHMARKS.md records it: a table per
// queue length, the locker's ratios to pg_advisory_lock under it.
func (r *QueueReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	p := &b
	fmt.Fprintf(p, "## Queue: one key, waiters in %d processes, hold %s\n\n", r.Processes, r.Hold)
	fmt.Fprintf(p, "PostgreSQL %s; %d rounds of %s per series, medians over rounds; took %s.\n\n",
		r.Server.Version, r.Rounds, r.Duration, r.Took.Round(time.Second))
	fmt.Fprintf(p, "| series | waiters | hand-offs/s | transactions per hand-off | backend transactions per hand-off | release call p50 | then next hold p50 | wait p50 | wait p99 | longest wait | grants per waiter (min–max) | unfairness | overlaps |\n")
	fmt.Fprintf(p, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range r.Results {
		txns := fmt.Sprintf("%.2f", x.TransactionsPerHandOff)
		if x.Series == QueueAdvisory {
			txns = "—" // lock and unlock are statements, but no commit is needed
		}
		backend := "—"
		if x.BackendTransactionsPerHandOff >= 0 {
			backend = fmt.Sprintf("%.2f", x.BackendTransactionsPerHandOff)
		}
		waiters := strconv.Itoa(x.Waiters)
		if oneWaiter(x.Series) {
			waiters = "1"
		}
		fmt.Fprintf(p, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %d–%d | ±%.0f%% | %d |\n",
			x.Series, waiters, x.HandOffsPerSec, txns, backend, ms(x.ReleaseP50), ms(x.HandOverP50),
			ms(x.WaitP50), ms(x.WaitP99), ms(x.WaitMax),
			x.GrantsPerWaiterMin, x.GrantsPerWaiterMax, 100*x.Unfairness, x.Overlaps)
	}
	fmt.Fprintf(p, "\n")
	for _, ratio := range r.Ratios() {
		fmt.Fprintf(p, "- %s at %d waiters: %.2f× pg_advisory_lock's hand-offs/s, longest wait %.2f× its longest",
			ratio.Series, ratio.Waiters, ratio.HandOffs, ratio.LongestWait)
		if ratio.VsFloor > 0 {
			fmt.Fprintf(p, "; %.2f× the durable floor's hand-offs/s", ratio.VsFloor)
		}
		fmt.Fprintf(p, "\n")
	}
	fmt.Fprintf(p, "\n%s: one connection committing a one-row UPDATE durably, then holding %s, whatever the queue length.\n",
		QueueFloor, r.Hold)
	for _, x := range r.Results {
		if x.Series == QueueNotifyFloor && x.BackendTransactionsPerHandOff >= 0 {
			fmt.Fprintf(p, "%s: the same with a NOTIFY nobody listens for in each commit, while %d connections LISTEN on other channels: "+
				"%.2f backend transactions per commit (1 + listeners = %d).\n",
				QueueNotifyFloor, x.Listeners, x.BackendTransactionsPerHandOff, 1+x.Listeners)
			break
		}
	}
	fmt.Fprintf(p, "Backend transactions: every transaction of the database's backends (pg_stat_database) from the workers' start to their exit, "+
		"less their connections' start-ups and setup, per grant; the run drains (waiters queued at its end are served), "+
		"so hand-offs/s counts only the grants before the end.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// QueueRatio compares a series with pg_advisory_lock at one queue length.
type QueueRatio struct {
	Series      string  `json:"series"`
	Waiters     int     `json:"waiters"`
	HandOffs    float64 `json:"hand_offs"`    // series ÷ advisory; higher is better
	LongestWait float64 `json:"longest_wait"` // series ÷ advisory; lower is better
	// VsFloor is the series' hand-offs ÷ the durable floor's (0 for the
	// floor itself, or when it did not run).
	VsFloor float64 `json:"vs_floor"`
}

// Ratios compares every series with pg_advisory_lock and with the durable
// floor at the same queue length, in the same run.
func (r *QueueReport) Ratios() []QueueRatio {
	var out []QueueRatio
	for _, ref := range r.Results {
		if ref.Series != QueueAdvisory {
			continue
		}
		floor, hasFloor := r.result(QueueFloor, ref.Waiters)
		for _, x := range r.Results {
			if x.Series == QueueAdvisory || x.Waiters != ref.Waiters {
				continue
			}
			q := QueueRatio{Series: x.Series, Waiters: x.Waiters}
			if ref.HandOffsPerSec > 0 {
				q.HandOffs = x.HandOffsPerSec / ref.HandOffsPerSec
			}
			if ref.WaitMax > 0 {
				q.LongestWait = float64(x.WaitMax) / float64(ref.WaitMax)
			}
			if hasFloor && x.Series != QueueFloor && floor.HandOffsPerSec > 0 {
				q.VsFloor = x.HandOffsPerSec / floor.HandOffsPerSec
			}
			out = append(out, q)
		}
	}
	return out
}

// result is series' result at a queue length.
func (r *QueueReport) result(series string, waiters int) (QueueResult, bool) {
	for _, x := range r.Results {
		if x.Series == series && x.Waiters == waiters {
			return x, true
		}
	}
	return QueueResult{}, false
}
