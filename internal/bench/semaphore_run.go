package bench

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// semaphoreRun is one series in one round.
type semaphoreRun struct {
	series   string
	round    int
	limit    int // holds a key may have at once (holdLimit)
	duration time.Duration
	stop     time.Time
	grants   []queueGrant // including the drain's, after stop
	workers  []string     // every worker, granted or not
	// unfinishedWait is the longest wait the stop cut short.
	unfinishedWait time.Duration
	// serverPeak is the most holders the server showed on one key, over
	// serverSamples samples (semaphore_sampler.go).
	serverPeak, serverSamples int
}

func newSemaphoreRun(job queueJob, results []queueWorkerResult, serverPeak, serverSamples int) semaphoreRun {
	r := semaphoreRun{series: job.Series, limit: holdLimit(job.Series, job.Permits), duration: job.Stop.Sub(job.Start),
		stop: job.Stop, serverPeak: serverPeak, serverSamples: serverSamples}
	for _, res := range results {
		r.grants = append(r.grants, res.Grants...)
		r.workers = slices.AppendSeq(r.workers, maps.Keys(res.GrantsPerWaiter))
		r.unfinishedWait = max(r.unfinishedWait, time.Duration(res.UnfinishedWaitNs))
	}
	slices.Sort(r.workers)
	return r
}

// beforeStop are the grants made before the stop: the rate and the shares
// leave out the drain's (at most one per worker).
func (r semaphoreRun) beforeStop() []queueGrant {
	var out []queueGrant
	for _, g := range r.grants {
		if g.Acquired < r.stop.UnixNano() {
			out = append(out, g)
		}
	}
	return out
}

func (r semaphoreRun) grantsPerSec() float64 {
	return float64(len(r.beforeStop())) / r.duration.Seconds()
}

// grantsPerWorker is every worker's grants before the stop, 0 for one that
// had none, in the workers' order.
func (r semaphoreRun) grantsPerWorker() []int {
	n := make(map[string]int, len(r.workers))
	for _, g := range r.beforeStop() {
		n[g.Waiter]++
	}
	out := make([]int, len(r.workers))
	for i, w := range r.workers {
		out[i] = n[w]
	}
	return out
}

// waits are every grant's wait, sorted.
func (r semaphoreRun) waits() []time.Duration {
	out := make([]time.Duration, len(r.grants))
	for i, g := range r.grants {
		out[i] = time.Duration(g.WaitNs)
	}
	slices.Sort(out)
	return out
}

// longest is the longest wait, counting one the stop cut short.
func (r semaphoreRun) longest() time.Duration {
	return max(r.unfinishedWait, slices.Max(append(r.waits(), 0)))
}

// holdsAtOnce sweeps each key's holds, from the acquire's return to the
// release's call on the one clock every worker process reads, and returns
// the most that overlapped on one key and how many grants began while
// their key already had limit holds. A hold as the workers saw it lies
// within the one the server granted, so a grant over the limit here is
// one there too.
func (r semaphoreRun) holdsAtOnce() (peak int, overLimit int64) {
	type edge struct {
		at    int64
		delta int
	}
	byKey := map[string][]edge{}
	for _, g := range r.grants {
		byKey[g.Key] = append(byKey[g.Key], edge{g.Acquired, 1}, edge{g.Releasing, -1})
	}
	for _, edges := range byKey {
		// A hold that ends at the instant another begins did not overlap it.
		slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
		held := 0
		for _, e := range edges {
			held += e.delta
			if e.delta > 0 && held > r.limit {
				overLimit++
			}
			peak = max(peak, held)
		}
	}
	return peak, overLimit
}

// tokensBackwards counts, on keys of one holder at a time, grants whose
// token is not above that of the grant before: broken fencing. Holders of
// a semaphore of several permits draw their tokens side by side, in no
// order of their grants, so their tokens are not compared.
func (r semaphoreRun) tokensBackwards() int64 {
	if r.limit > 1 {
		return 0
	}
	byKey := map[string][]queueGrant{}
	for _, g := range r.grants {
		byKey[g.Key] = append(byKey[g.Key], g)
	}
	var n int64
	for _, gs := range byKey {
		slices.SortFunc(gs, func(a, b queueGrant) int { return cmp.Compare(a.Acquired, b.Acquired) })
		for i := 1; i < len(gs); i++ {
			if gs[i].Token <= gs[i-1].Token {
				n++
			}
		}
	}
	return n
}

// violations are the run's broken rules: grants over the limit, tokens
// backwards, and a server sample over the limit (counted once).
func (r semaphoreRun) violations() int64 {
	_, over := r.holdsAtOnce()
	n := over + r.tokensBackwards()
	if r.serverPeak > r.limit {
		n++
	}
	return n
}
