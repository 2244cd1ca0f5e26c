package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Config is one run of the suite.
type Config struct {
	// Duration of the workload. Defaults to 10s. The run goes on, up to
	// twice as long, until the injector has tried every kind once.
	Duration time.Duration
	// Seed makes the fault schedule and the workers' choices reproducible
	// (timing still varies from run to run).
	Seed uint64
	// Workers, HotKeys and ColdKeys size the workload. Default 10, 2, 12.
	Workers, HotKeys, ColdKeys int
	// TTL of every lease. Defaults to 1s; keepalives renew every TTL/4 and
	// stop trusting a lease TTL/4 before it expires.
	TTL time.Duration
	// LockDelay is the lock-delay of the odd-numbered workers' exclusive
	// leases (locker's Request.LockDelay). Defaults to TTL/4; negative: none.
	LockDelay time.Duration
	// SetOneIn: one grant in this many takes two keys at once
	// (a set's Acquire), kept with one Keepalive and given back
	// with one Release. Defaults to 4; negative: never.
	SetOneIn int
	// SessionWorkers is how many more workers keep their leases with a
	// locker.Session, two to four keys a process (sessionWorker), beside
	// Workers. Defaults to 3; negative: none.
	SessionWorkers int
	// ModeWorkers is how many more workers hold the mode keys, beside
	// Workers and SessionWorkers: each hold one of Permits permits of
	// SemaphoreKey half the time, else SharedKey, shared or (one time in
	// four) alone. They keep, write and release as the others do, and
	// every fault that picks a holder may pick them. Defaults to 3;
	// negative: none.
	ModeWorkers int
	// Permits is SemaphoreKey's permits. Defaults to 2.
	Permits int
	// ElectionWorkers is how many candidates campaign for ElectionKey
	// beside two observers (elections.go). Defaults to 3; negative: none.
	ElectionWorkers int
	// AtLeastWorkers is how many nodes run a job under AtLeastKey held at
	// least AtLeast (atleast.go). Defaults to 3; negative: none.
	AtLeastWorkers int
	// AtLeast is the at-least workers' period. Defaults to TTL/2.
	AtLeast time.Duration
	// Kinds of fault to inject. Defaults to AllKinds.
	Kinds []string
	// Unsafe makes workers skip the fence and ignore keepalive cancellation:
	// the checker must then find violations.
	Unsafe bool
	// Failover runs the server with a synchronous standby, connects every
	// client through a multi-host DSN (target_session_attrs=read-write), and
	// adds the Promote fault: once, the primary crashes and the standby is
	// promoted. The checker then reads the promoted server.
	Failover bool
	// Logf reports progress and oddities. Defaults to discarding.
	Logf func(format string, args ...any)
}

// Summary is what a run did and what the checker found.
type Summary struct {
	Seed     uint64
	Elapsed  time.Duration
	Faults   map[string]int // injected, per kind
	Observed map[string]int // seen by workers, per class
	Report   history.Report
	// Terms the election observers reported; KeptReleases, the at-least
	// workers' releases that kept the key (each a fact the checker held the
	// event log to).
	Terms, KeptReleases int
	// OtherErrors are a few unexpected worker errors, for diagnosis.
	OtherErrors []string
}

func (c *Config) defaults() {
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Workers == 0 {
		c.Workers = 10
	}
	if c.HotKeys == 0 {
		c.HotKeys = 2
	}
	if c.ColdKeys == 0 {
		c.ColdKeys = 12
	}
	if c.TTL == 0 {
		c.TTL = time.Second
	}
	if c.LockDelay == 0 {
		c.LockDelay = c.TTL / 4
	}
	if c.SetOneIn == 0 {
		c.SetOneIn = 4
	}
	if c.SessionWorkers == 0 {
		c.SessionWorkers = 3
	}
	if c.ModeWorkers == 0 {
		c.ModeWorkers = 3
	}
	if c.Permits <= 0 {
		c.Permits = 2
	}
	if c.ElectionWorkers == 0 {
		c.ElectionWorkers = 3
	}
	if c.AtLeastWorkers == 0 {
		c.AtLeastWorkers = 3
	}
	if c.AtLeast == 0 {
		c.AtLeast = c.TTL / 2
	}
	if c.Kinds == nil {
		c.Kinds = AllKinds
	}
	if c.Failover && !slices.Contains(c.Kinds, Promote) {
		c.Kinds = append(slices.Clip(c.Kinds), Promote)
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Run starts a private PostgreSQL, runs the workload and the injector for
// cfg.Duration, then checks the history. It returns an error only when the
// run itself could not be carried out; violations are in Summary.Report.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	cfg.defaults()
	opts := pgtemp.Options{Fast: true, HandleSignals: true,
		Settings: map[string]string{"max_connections": "200"}}
	inst, err := pgtemp.Start(ctx, opts)
	if err != nil {
		return Summary{}, err
	}
	defer inst.Close()
	dsn := inst.DSN("")
	var standby *pgtemp.Instance
	if cfg.Failover {
		if standby, dsn, err = startSyncStandby(ctx, inst, opts); err != nil {
			return Summary{}, err
		}
		defer standby.Close()
	}
	if err := setup(ctx, dsn, cfg); err != nil {
		return Summary{}, err
	}

	rec, tally := history.NewRecorder(), newCounts()
	var opSeq atomic.Int64
	var ends sync.WaitGroup
	lag := &lagMonitor{}
	keys := make([]string, 0, cfg.HotKeys+cfg.ColdKeys)
	for i := range cfg.HotKeys {
		keys = append(keys, fmt.Sprintf("hot-%d", i))
	}
	for i := range cfg.ColdKeys {
		keys = append(keys, fmt.Sprintf("cold-%d", i))
	}
	notifier := locker.NewNotifier(locker.NotifierConfig{Connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }})
	margin := cfg.TTL / 4 // the keepalives' and sessions' safety margin
	lk, err := locker.New(locker.Config{TTL: cfg.TTL, RenewEvery: cfg.TTL / 4, SafetyMargin: margin,
		WaitRecheck: cfg.TTL / 2, Notifier: notifier, Actor: "faults",
		LogGrants: true}) // the checker reads every grant back from the event log; releases stay lazy (worker.release)
	if err != nil {
		return Summary{}, err
	}

	var pools []*pgxpool.Pool
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	// newWorker makes worker i with its pools, named for the injector:
	// faults-acq-wN, faults-write-wN, and faults-ka-wN (keepalives) or
	// faults-sess-wN (a session worker's sessions).
	newWorker := func(i int, session bool) (*worker, *pgxpool.Pool, error) {
		var delay time.Duration
		if i%2 == 1 {
			delay = max(0, cfg.LockDelay)
		}
		w := &worker{id: i, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)), lk: lk, ttl: cfg.TTL,
			keys: keys, hot: cfg.HotKeys, unsafe: cfg.Unsafe, delay: delay, setOneIn: max(0, cfg.SetOneIn),
			margin: margin, rec: rec, counts: tally, opSeq: &opSeq, ends: &ends, lag: lag}
		keep := "ka"
		if session {
			keep = "sess"
		}
		var keepPool *pgxpool.Pool
		for _, p := range []struct {
			dst  **pgxpool.Pool
			name string
			max  int32
		}{{&w.acq, "acq", 2}, {&keepPool, keep, 2}, {&w.write, "write", 1}} {
			pool, err := workerPool(ctx, dsn, fmt.Sprintf("faults-%s-w%d", p.name, i), p.max, w.timeoutMs.Load)
			if err != nil {
				return nil, nil, err
			}
			pools = append(pools, pool)
			*p.dst = pool
		}
		return w, keepPool, nil
	}
	workers := make([]*worker, cfg.Workers)
	for i := range workers {
		w, kaPool, err := newWorker(i, false)
		if err != nil {
			return Summary{}, err
		}
		w.ka = &frozenDB{db: kaPool}
		if cfg.ModeWorkers > 0 {
			w.modePermits = cfg.Permits
		}
		workers[i] = w
	}
	for i := range max(0, cfg.ModeWorkers) {
		w, kaPool, err := newWorker(cfg.Workers+max(0, cfg.SessionWorkers)+i, false)
		if err != nil {
			return Summary{}, err
		}
		w.ka = &frozenDB{db: kaPool}
		w.setOneIn, w.permits = 0, cfg.Permits
		workers = append(workers, w)
	}
	sessions := make([]*sessionWorker, max(0, cfg.SessionWorkers))
	for i := range sessions {
		w, sessPool, err := newWorker(cfg.Workers+i, true)
		if err != nil {
			return Summary{}, err
		}
		w.bound = true
		if cfg.ModeWorkers > 0 {
			w.modePermits = cfg.Permits
		}
		sessions[i] = &sessionWorker{worker: w, sess: sessPool}
	}
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return Summary{}, err
	}
	pools = append(pools, admin)
	sched, err := scheduledPool(ctx, dsn)
	if err != nil {
		return Summary{}, err
	}
	pools = append(pools, sched)
	elect, jobs, err := startScheduled(sched, dsn, cfg, locker.Config{TTL: cfg.TTL, RenewEvery: cfg.TTL / 4,
		SafetyMargin: margin, WaitRecheck: cfg.TTL / 2, Notifier: notifier, Actor: "faults"}, rec)
	if err != nil {
		return Summary{}, err
	}
	inj := &injector{firstDone: make(chan struct{}), inst: inst, standby: standby, admin: admin, rng: rand.New(rand.NewPCG(cfg.Seed, 0)), counts: tally,
		workers: workers, sessions: sessions, hot: keys[:cfg.HotKeys], rowKeys: rowKeys(keys[:cfg.HotKeys], cfg.ModeWorkers),
		ttl: cfg.TTL, kinds: cfg.Kinds, logf: cfg.Logf, rec: rec}

	started := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go endRun(ctx, cancel, cfg, inj.firstDone)
	var wg sync.WaitGroup
	nctx, stopNotifier := context.WithCancel(ctx)
	defer stopNotifier()
	go func() { _ = notifier.Run(nctx) }()
	go lag.run(nctx)
	for _, w := range workers {
		wg.Go(func() { w.run(runCtx) })
	}
	for _, w := range sessions {
		wg.Go(func() { w.run(runCtx) })
	}
	wg.Go(func() { inj.run(runCtx) })
	wg.Go(func() { elect.run(runCtx, cfg.Seed) })
	wg.Go(func() { jobs.run(runCtx, cfg.Seed) })
	wg.Wait()
	ends.Wait()
	stopNotifier()
	elapsed := time.Since(started)

	// The last fault may have been a restart still settling: check on a
	// fresh connection, retrying while the server comes back.
	var report history.Report
	restarted := false
	testdb.Within(5*time.Second, func() bool {
		if report, err = check(ctx, dsn, rec, tally, elect, jobs); err == nil || ctx.Err() != nil {
			return true
		}
		if !restarted {
			// A failed restart leaves the server down: start it again.
			restarted = true
			_ = inj.inst.Start(ctx)
		}
		return false
	})
	if err != nil {
		return Summary{}, fmt.Errorf("faults: check: %w", err)
	}
	s := Summary{Seed: cfg.Seed, Elapsed: elapsed, Faults: tally.Faults(), Observed: tally.Observed(), Report: report,
		Terms: elect.terms(), KeptReleases: jobs.keptCount()}
	for _, w := range workers {
		s.OtherErrors = append(s.OtherErrors, w.otherErrs...)
	}
	for _, w := range sessions {
		s.OtherErrors = append(s.OtherErrors, w.otherErrs...)
	}
	return s, nil
}

// endRun ends the run (cancel) after cfg.Duration, or later, up to twice
// as long, if the injector's first round, which tries every kind of fault
// once, has not ended by then (firstDone): on a loaded machine each
// restart takes seconds, and a run that ended before it tried every kind
// would not have checked what it claims to.
func endRun(ctx context.Context, cancel context.CancelFunc, cfg Config, firstDone <-chan struct{}) {
	defer cancel()
	timer := time.NewTimer(cfg.Duration)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-timer.C:
	}
	select {
	case <-firstDone:
		return
	default:
	}
	cfg.Logf("the first round of faults is not over after %s: the run goes on until it is, for up to %s more", cfg.Duration, cfg.Duration)
	timer.Reset(cfg.Duration)
	select {
	case <-ctx.Done():
	case <-firstDone:
	case <-timer.C:
	}
}

// startSyncStandby starts a synchronous standby of primary and returns it
// with a multi-host DSN listing both, primary first.
func startSyncStandby(ctx context.Context, primary *pgtemp.Instance, opts pgtemp.Options) (*pgtemp.Instance, string, error) {
	// A standby retries a lost connection after wal_retrieve_retry_interval
	// (5s by default), and until it is back every commit on the primary
	// waits: longer than a lease, so grants would arrive already expired.
	settings := map[string]string{"wal_retrieve_retry_interval": "50ms"}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	opts.Settings = settings
	standby, err := pgtemp.StartStandby(ctx, primary, opts)
	if err != nil {
		return nil, "", err
	}
	if err := standby.SetSynchronous(ctx, true); err != nil {
		standby.Close()
		return nil, "", err
	}
	return standby, pgtemp.MultiHostDSN("", primary, standby), nil
}

func setup(ctx context.Context, dsn string, cfg Config) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if err := store.Migrate(ctx, conn); err != nil {
		return fmt.Errorf("faults: migrate: %w", err)
	}
	return history.CreateGuarded(ctx, conn)
}

// String is the run's summary, as pasted in docs/reliability.md.
func (s Summary) String() string {
	total := 0
	for _, n := range s.Faults {
		total += n
	}
	return fmt.Sprintf("seed %d, %s: %d faults injected (%s)\nchecked: %s; %d election terms observed, %d at-least releases kept\nworkers saw: %s\nviolations: %d",
		s.Seed, s.Elapsed.Round(time.Second), total, FormatCounts(s.Faults),
		s.Report.Stats, s.Terms, s.KeptReleases, FormatCounts(s.Observed), len(s.Report.Violations))
}

// check checks the run's history against what the database shows, on a
// connection of its own (the elections' observers and the at-least
// workers' kept releases too), and counts its hand-offs into tally.
func check(ctx context.Context, dsn string, rec *history.Recorder, tally *counts, elect *elections, jobs *atLeastJobs) (history.Report, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return history.Report{}, err
	}
	defer conn.Close(ctx)
	obs, err := history.Observe(ctx, conn)
	if err != nil {
		return history.Report{}, err
	}
	report := history.Check(rec.Ops(), rec.LeaseEnds(), rec.VouchedLeases(), obs)
	report.Violations = append(report.Violations, elect.check(obs)...)
	report.Violations = append(report.Violations, jobs.check(obs)...)
	return report, countHandOffs(ctx, conn, tally)
}
