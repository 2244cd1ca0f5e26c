package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Queue series names, as reported.
const (
	QueueAdvisory = "pg_advisory_lock" // PostgreSQL's own lock manager: FIFO, wakes only the next waiter
	QueueLocker   = "locker"           // locker.Acquire (the fair queue) with a Notifier in every process
	// QueueFloor is the durable floor of a hand-off: one connection
	// committing a one-row UPDATE, then holding, again and again. No lock
	// that records its grant durably can hand off faster on this server.
	QueueFloor = "durable floor"
	// QueueNotifyFloor is the durable floor with a NOTIFY in each commit,
	// on a channel nobody listens on, while a connection in every process
	// LISTENs on another (queue_notify.go): what the NOTIFY of a hand-off
	// costs the server before anyone hears it.
	QueueNotifyFloor = "notify floor"
)

// queueSeries is every series the queue scenario measures, in the order of
// the first round (later rounds rotate it, so no series always runs first).
var queueSeries = []string{QueueAdvisory, QueueLocker, QueueFloor, QueueNotifyFloor}

// oneWaiter is whether a series runs one "waiter" whatever the queue
// length: the floors.
func oneWaiter(series string) bool { return series == QueueFloor || series == QueueNotifyFloor }

// QueueOptions configure RunQueue: many waiters, spread over several
// processes, all taking one key in turn and holding it briefly.
type QueueOptions struct {
	// Waiters are the queue lengths measured (waiters on the one key, over
	// all processes). Defaults to 64.
	Waiters []int
	// Processes is how many worker processes share the waiters. Defaults to 4.
	Processes int
	// Hold is how long each grant is held before it is released. Defaults
	// to 2ms.
	Hold time.Duration
	// Duration is how long each series runs in each round. Defaults to 5s.
	Duration time.Duration
	// Rounds is how many times every series runs; results are medians over
	// rounds. Defaults to 3.
	Rounds int
	// Spawn starts one worker process that reads its job (JSON) from stdin
	// and writes its result (JSON) to stdout. nil: this executable, as
	// `bench --queue-worker` (see Command).
	Spawn func(ctx context.Context) *exec.Cmd
	// Progress receives one line per finished series. nil: silent.
	Progress io.Writer
}

func (o QueueOptions) withDefaults() (QueueOptions, error) {
	if len(o.Waiters) == 0 {
		o.Waiters = []int{64}
	}
	if o.Processes == 0 {
		o.Processes = 4
	}
	if o.Hold == 0 {
		o.Hold = 2 * time.Millisecond
	}
	if o.Duration == 0 {
		o.Duration = 5 * time.Second
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if o.Spawn == nil {
		o.Spawn = spawnSelf
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.Waiters = slices.Clone(o.Waiters)
	slices.Sort(o.Waiters)
	o.Waiters = slices.Compact(o.Waiters)
	return o, o.validate()
}

// maxQueueWaiters keeps the advisory series (a session per waiter) within
// the connections a server started for the queue scenario allows.
const maxQueueWaiters = 256

func (o QueueOptions) validate() error {
	if o.Processes < 1 || o.Processes > 64 {
		return optionErrorf("processes must be between 1 and 64, got %d", o.Processes)
	}
	for _, w := range o.Waiters {
		if w < o.Processes || w > maxQueueWaiters {
			return optionErrorf("waiters must be between the number of processes (%d) and %d, got %d",
				o.Processes, maxQueueWaiters, w)
		}
	}
	if o.Hold < 0 || o.Hold > time.Second {
		return optionErrorf("hold %s must be between 0 and 1s", o.Hold)
	}
	if o.Duration < 100*time.Millisecond {
		return optionErrorf("duration %s is too short for the queue scenario (at least 100ms)", o.Duration)
	}
	if o.Rounds < 1 {
		return optionErrorf("rounds must be at least 1")
	}
	return nil
}

// QueueServerSettings are what a server started for the queue scenario
// needs: the advisory series holds a session per waiter.
var QueueServerSettings = map[string]string{"max_connections": "400"}

// RunQueue measures hand-offs of one key between many waiters on the
// server at dsn, in a schema of its own (dropped at the end): for each
// queue length and round, every series in turn, each with fresh worker
// processes that start together and stop together.
func RunQueue(ctx context.Context, dsn string, opts QueueOptions) (*QueueReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	t, err := openTarget(ctx, dsn, 2)
	if err != nil {
		return nil, err
	}
	defer t.close(ctx)
	obs, err := openBackendObserver(ctx, dsn, queueWorkerApp(t.schema))
	if err != nil {
		return nil, err
	}
	defer obs.close(ctx)
	rep := &QueueReport{Started: time.Now(), Processes: opts.Processes, Hold: opts.Hold,
		Duration: opts.Duration, Rounds: opts.Rounds}
	if rep.Server, err = t.serverInfo(ctx); err != nil {
		return nil, err
	}
	var runs []queueRun
	for round := range opts.Rounds {
		for _, waiters := range opts.Waiters {
			for _, s := range rotate(queueSeries, round) {
				job := queueJob{DSN: dsn, Schema: t.schema, Series: s, Hold: opts.Hold,
					Key: fmt.Sprintf("queue-%s-%d-%d", s, waiters, round), AdvisoryKey: int64(round*1000 + waiters)}
				r, err := runQueueSeries(ctx, opts, obs, job, waiters)
				if err != nil {
					return nil, fmt.Errorf("bench: queue %s, %d waiters, round %d: %w", s, waiters, round+1, err)
				}
				fmt.Fprintf(opts.Progress, "queue round %d/%d: %-16s %3d waiters: %6.0f hand-offs/s, longest wait %s\n",
					round+1, opts.Rounds, s, waiters, r.handOffsPerSec(), r.longest())
				runs = append(runs, r)
			}
		}
	}
	rep.Results = summarizeQueue(runs)
	rep.Took = time.Since(rep.Started)
	return rep, nil
}

// queueStartDelay is how far ahead of now the workers are told to start:
// time for every process to start, connect, warm up (warmUp) and line up
// its waiters, so all of them begin at one instant.
const queueStartDelay = 4 * time.Second

// runQueueSeries runs one series once: waiters spread over the processes,
// with the backend transactions counted around them (obs may be nil).
func runQueueSeries(ctx context.Context, opts QueueOptions, obs *backendObserver, job queueJob, waiters int) (queueRun, error) {
	processes, spread := opts.Processes, waiters
	switch job.Series {
	case QueueFloor:
		processes, spread = 1, 1 // one connection, whatever the queue length
	case QueueNotifyFloor:
		spread = 1 // one committer; every process listens
	}
	results := make([]queueWorkerResult, processes)
	backend, err := obs.measureBackend(ctx, func() (int64, error) {
		job.Start = time.Now().Add(queueStartDelay)
		job.Stop = job.Start.Add(opts.Duration)
		errs := make([]error, processes)
		var wg sync.WaitGroup
		for p := range processes {
			j := job
			j.Process = p
			j.FirstWaiter, j.Waiters = shareOf(spread, processes, p)
			wg.Go(func() { results[p], errs[p] = runWorkerProcess(ctx, opts.Spawn, j) })
		}
		wg.Wait()
		var setup int64
		for _, r := range results {
			setup += r.SetupTransactions
		}
		return setup, errors.Join(errs...)
	})
	if err != nil {
		return queueRun{}, err
	}
	r := newQueueRun(job, waiters, results)
	r.backendTransactions = backend
	r.listeners = listenersOf(job.Series, processes)
	return r, nil
}

// shareOf is process p's part of n waiters spread over processes: the
// index of its first and how many, the first n mod processes one more.
func shareOf(n, processes, p int) (first, count int) {
	count = n / processes
	first = p*count + min(p, n%processes)
	if p < n%processes {
		count++
	}
	return first, count
}

// listenersOf is how many connections LISTEN in a series: a Notifier or a
// listener per process.
func listenersOf(series string, processes int) int {
	if series == QueueLocker || series == QueueNotifyFloor {
		return processes
	}
	return 0
}

// runWorkerProcess starts one worker process, hands it its job and reads
// its result.
func runWorkerProcess(ctx context.Context, spawn func(context.Context) *exec.Cmd, job queueJob) (queueWorkerResult, error) {
	in, err := json.Marshal(job)
	if err != nil {
		return queueWorkerResult{}, err
	}
	cmd := spawn(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return queueWorkerResult{}, fmt.Errorf("worker process %d: %w: %s", job.Process, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res queueWorkerResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return queueWorkerResult{}, fmt.Errorf("worker process %d: unreadable result: %w", job.Process, err)
	}
	if res.Error != "" {
		return queueWorkerResult{}, fmt.Errorf("worker process %d: %s", job.Process, res.Error)
	}
	return res, nil
}

// spawnSelf runs this executable as a queue worker.
func spawnSelf(ctx context.Context) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.CommandContext(ctx, exe, "bench", "--"+queueWorkerFlag)
}

// queueConnConfig is a worker's connection settings: the run's schema, and
// the application name that marks its backends.
func queueConnConfig(job queueJob) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(job.DSN)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg.RuntimeParams["search_path"] = job.Schema
	cfg.RuntimeParams["application_name"] = queueWorkerApp(job.Schema)
	return cfg, nil
}

// queueWorkerApp is the application name of the worker processes'
// connections, by which the backend count knows when they are gone.
func queueWorkerApp(schema string) string { return schema + "_queue" }
