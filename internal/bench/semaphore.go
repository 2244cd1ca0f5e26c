package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sync"
	"time"
)

// The semaphore scenario (issue #24's target): workers spread over several
// processes wait for a permit of one key of N permits (a waiting Acquire of a permit),
// hold it, release it, again and again; against the same workers on N
// mutex keys, worker i on key i mod N, each waiting in its key's fair queue
// (Acquire). Both let N workers hold at once, so a semaphore as cheap as
// the keys grants as often, and one as fair gives every worker as many.
// Same hold, duration and server; rounds interleaved. The workers are the
// queue scenario's worker processes (queue_worker.go), which start
// together, stop together and time every grant on one clock.

// Series of the semaphore scenario.
const (
	SemaphorePermits   = "semaphore"  // a waiting Acquire of a permit on one key of N permits
	SemaphoreMutexKeys = "mutex keys" // Acquire on N keys, worker i on key i mod N
)

// semaphoreKeyPrefix names each series' keys (a round's are fresh).
var semaphoreKeyPrefix = map[string]string{SemaphorePermits: "bench-semaphore", SemaphoreMutexKeys: "bench-mutex"}

// semaphoreSeries in the order of the first round (later rounds rotate it).
var semaphoreSeries = []string{SemaphorePermits, SemaphoreMutexKeys}

// The targets (issue #39): the semaphore grants at least 0.9× as often as the
// mutex keys, and every worker's grants are within ±15% of the mean.
const (
	semaphoreWantRatio  = 0.9
	semaphoreWantSpread = 0.15
)

// SemaphoreOptions configure RunSemaphore. The zero value runs the issue's
// load.
type SemaphoreOptions struct {
	// Workers over all processes. Defaults to 16.
	Workers int
	// Processes the workers are spread over. Defaults to 2.
	Processes int
	// Permits of the semaphore key, and the number of mutex keys it is
	// measured against. Defaults to 4.
	Permits int
	// Hold is how long each grant is held. Defaults to 2ms.
	Hold time.Duration
	// Duration each series runs per round. Defaults to 5s.
	Duration time.Duration
	// Rounds of both series, interleaved. Defaults to 3.
	Rounds int
	// Spawn starts one worker process, as QueueOptions.Spawn. nil: this
	// executable.
	Spawn func(ctx context.Context) *exec.Cmd
	// Progress receives one line per finished series; nil: silent.
	Progress io.Writer
}

func (o SemaphoreOptions) withDefaults() (SemaphoreOptions, error) {
	o.Workers = cmp.Or(o.Workers, 16)
	o.Processes = cmp.Or(o.Processes, 2)
	o.Permits = cmp.Or(o.Permits, 4)
	o.Hold = cmp.Or(o.Hold, 2*time.Millisecond)
	o.Duration = cmp.Or(o.Duration, 5*time.Second)
	o.Rounds = cmp.Or(o.Rounds, 3)
	if o.Spawn == nil {
		o.Spawn = spawnSelf
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch {
	case o.Processes < 1 || o.Processes > 64:
		return o, optionErrorf("processes must be between 1 and 64, got %d", o.Processes)
	case o.Workers < o.Processes || o.Workers > maxWorkers:
		return o, optionErrorf("workers must be between the number of processes (%d) and %d, got %d",
			o.Processes, maxWorkers, o.Workers)
	case o.Permits < 1 || o.Permits > o.Workers:
		// More keys than workers would leave mutex keys nobody takes.
		return o, optionErrorf("permits must be between 1 and the number of workers (%d), got %d", o.Workers, o.Permits)
	case o.Hold < 0 || o.Hold > time.Second:
		return o, optionErrorf("hold %s must be between 0 and 1s", o.Hold)
	case o.Duration < 100*time.Millisecond:
		return o, optionErrorf("duration %s is too short for the semaphore scenario (at least 100ms)", o.Duration)
	case o.Rounds < 1:
		return o, optionErrorf("rounds must be at least 1")
	}
	return o, nil
}

// RunSemaphore measures on the server dsn names, in a schema of its own
// (dropped at the end).
func RunSemaphore(ctx context.Context, dsn string, opts SemaphoreOptions) (*SemaphoreReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &SemaphoreReport{Started: time.Now(), NumCPU: runtime.NumCPU(), Workers: opts.Workers,
		Processes: opts.Processes, Permits: opts.Permits, Hold: opts.Hold, Duration: opts.Duration,
		Rounds: opts.Rounds, LoadBefore: loadAverage()}
	// The pool serves the holder samples.
	t, err := openTarget(ctx, dsn, 1)
	if err != nil {
		return nil, err
	}
	defer t.close(ctx)
	if rep.Server, err = t.serverInfo(ctx); err != nil {
		return nil, err
	}
	var runs []semaphoreRun
	for round := range opts.Rounds {
		for _, s := range rotate(semaphoreSeries, round) {
			job := queueJob{DSN: dsn, Schema: t.schema, Series: s, Hold: opts.Hold, Permits: opts.Permits,
				Key: fmt.Sprintf("%s-round-%d", semaphoreKeyPrefix[s], round)}
			r, err := runSemaphoreSeries(ctx, opts, t, job)
			if err != nil {
				return nil, fmt.Errorf("bench: semaphore %s, round %d: %w", s, round+1, err)
			}
			r.round = round
			peak, _ := r.holdsAtOnce()
			fmt.Fprintf(opts.Progress, "semaphore round %d/%d: %-10s %6.0f grants/s, grants per worker ±%.0f%%, held at once %d (server %d)\n",
				round+1, opts.Rounds, s, r.grantsPerSec(), 100*unfairness(r.grantsPerWorker()), peak, r.serverPeak)
			runs = append(runs, r)
		}
	}
	rep.summarize(runs)
	rep.Took = time.Since(rep.Started)
	rep.LoadAfter = loadAverage()
	return rep, nil
}

// runSemaphoreSeries runs one series once: the workers in their processes,
// and the holder sampler beside them.
func runSemaphoreSeries(ctx context.Context, opts SemaphoreOptions, t *target, job queueJob) (semaphoreRun, error) {
	job.Start = time.Now().Add(queueStartDelay)
	job.Stop = job.Start.Add(opts.Duration)
	sampling := startHolderSampling(ctx, t.pool, seriesKeys(job), job.Start)
	results := make([]queueWorkerResult, opts.Processes)
	errs := make([]error, opts.Processes)
	var wg sync.WaitGroup
	for p := range opts.Processes {
		j := job
		j.Process = p
		j.FirstWaiter, j.Waiters = shareOf(opts.Workers, opts.Processes, p)
		wg.Go(func() { results[p], errs[p] = runWorkerProcess(ctx, opts.Spawn, j) })
	}
	wg.Wait()
	peak, samples, err := sampling.finish()
	if err := errors.Join(append(errs, err)...); err != nil {
		return semaphoreRun{}, err
	}
	return newSemaphoreRun(job, results, peak, samples), nil
}

// seriesKeys are the keys a series' workers take.
func seriesKeys(job queueJob) []string {
	if job.Series != SemaphoreMutexKeys {
		return []string{job.Key}
	}
	keys := make([]string, job.Permits)
	for i := range keys {
		keys[i] = waiterKey(queueJob{Series: job.Series, Key: job.Key, Permits: job.Permits}, i)
	}
	return keys
}

// holdLimit is the most leases a key of the series may have at once.
func holdLimit(series string, permits int) int {
	if series == SemaphorePermits {
		return permits
	}
	return 1
}
