package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The pooler scenario: lock cycles through PgBouncer in transaction mode
// beside the same cycles straight to the server, and a bare one-row UPDATE
// the same two ways, interleaved in one run. A pooler costs every
// statement a hop; what the lock protocol must not add is a cost of its own
// on top (statements the pooler cannot pass cheaply, or more of them), so
// the claim is that the lock cycle keeps at least 0.9 of the share of its
// direct rate that a bare UPDATE keeps. Both paths use pgx's
// default_query_exec_mode=exec, the mode docs/pooling.md recommends behind
// a transaction pooler, so the ratio is the pooler's alone.

// PoolerOptions configure RunPooler. The zero value runs the default.
type PoolerOptions struct {
	// Workers run at once, and the pooler holds as many server
	// connections, so its cost shows rather than its queueing. Defaults to 8.
	Workers int
	// Duration each series runs per round. Defaults to 2s.
	Duration time.Duration
	// Rounds of every series, interleaved. Defaults to 5.
	Rounds int
	// TTL of the locker's leases. Defaults to 30s.
	TTL time.Duration
	// Progress receives one line per finished series; nil: silent.
	Progress io.Writer
}

func (o PoolerOptions) withDefaults() (PoolerOptions, error) {
	o.Workers = cmp.Or(o.Workers, 8)
	o.Duration = cmp.Or(o.Duration, 2*time.Second)
	o.Rounds = cmp.Or(o.Rounds, 5)
	o.TTL = cmp.Or(o.TTL, 30*time.Second)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch {
	case o.Workers < 1 || o.Workers > maxWorkers:
		return o, optionErrorf("workers must be between 1 and %d, got %d", maxWorkers, o.Workers)
	case o.Duration < 10*time.Millisecond:
		return o, optionErrorf("duration %s is too short (at least 10ms)", o.Duration)
	case o.Rounds < 1:
		return o, optionErrorf("rounds must be at least 1")
	case o.TTL < time.Second:
		return o, optionErrorf("TTL %s is too short: leases must outlive a cycle (at least 1s)", o.TTL)
	}
	return o, nil
}

// The pooler scenario's series: what runs, and which way.
const (
	SeriesLockerDirect  = "locker, direct"
	SeriesLockerPooled  = "locker, through PgBouncer"
	SeriesUpdateDirect  = "one-row UPDATE, direct"
	SeriesUpdatePooled  = "one-row UPDATE, through PgBouncer"
	poolerApp           = "lockctl_bench_pooler"
	poolerWantShareKept = 0.9
)

// RunPooler measures on srv, a throwaway server of the caller's, in its
// default schema (PgBouncer refuses the search_path that confines the other
// scenarios to a schema of their own), with a PgBouncer it starts in front.
func RunPooler(ctx context.Context, srv *pgtemp.Instance, opts PoolerOptions) (*PoolerReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	rep := &PoolerReport{Started: began, NumCPU: runtime.NumCPU(), Workers: opts.Workers,
		Duration: opts.Duration, Rounds: opts.Rounds, LoadBefore: loadAverage()}
	bouncer, err := pgtemp.StartBouncer(ctx, srv, pgtemp.BouncerOptions{PoolSize: opts.Workers})
	if err != nil {
		return nil, err
	}
	defer bouncer.Close()
	direct, err := poolerPool(ctx, srv.DSN(""), opts.Workers)
	if err != nil {
		return nil, err
	}
	defer direct.Close()
	pooled, err := poolerPool(ctx, bouncer.DSN(""), opts.Workers)
	if err != nil {
		return nil, err
	}
	defer pooled.Close()

	t := &target{dsn: srv.DSN(""), appName: poolerApp, pool: direct}
	if err := t.migrate(ctx, opts.Workers); err != nil {
		return nil, err
	}
	if rep.Server, err = t.serverInfo(ctx); err != nil {
		return nil, err
	}
	probeConn, err := pgx.Connect(ctx, srv.DSN(""))
	if err != nil {
		return nil, fmt.Errorf("bench: connect probe: %w", store.Interpret(err))
	}
	defer probeConn.Close(context.WithoutCancel(ctx))
	probe := &serverProbe{conn: probeConn, appName: poolerApp, every: 20 * time.Millisecond}

	lk, err := locker.New(locker.Config{TTL: opts.TTL})
	if err != nil {
		return nil, err
	}
	chkDirect, chkPooled := newChecker(), newChecker()
	all := []series{
		renamed(SeriesLockerDirect, lockerSeries(SeriesLocker, lk, direct, chkDirect)),
		renamed(SeriesLockerPooled, lockerSeries(SeriesLocker, lk, pooled, chkPooled)),
		renamed(SeriesUpdateDirect, commitFloorSeries(direct)),
		renamed(SeriesUpdatePooled, commitFloorSeries(pooled)),
	}
	checkers := map[string]*checker{SeriesLockerDirect: chkDirect, SeriesLockerPooled: chkPooled}
	for _, s := range all { // warm-up, not reported: connections, first rows
		if _, err := runSeries(ctx, s, ScenarioSolo, opts.Workers, soloKeys, min(opts.Duration/4, 300*time.Millisecond), nil, checkers[s.name]); err != nil {
			return nil, err
		}
	}
	var samples []sample
	for round := range opts.Rounds {
		for _, s := range rotate(all, round) {
			smp, err := runSeries(ctx, s, ScenarioSolo, opts.Workers, soloKeys, opts.Duration, probe, checkers[s.name])
			if err != nil {
				return nil, err
			}
			smp.round = round
			samples = append(samples, smp)
			fmt.Fprintf(opts.Progress, "pooler round %d/%d  %-34s %8.0f cycles/s\n",
				round+1, opts.Rounds, s.name, float64(smp.granted)/smp.elapsed.Seconds())
		}
	}
	rep.summarize(samples)
	rep.Took = time.Since(began)
	rep.LoadAfter = loadAverage()
	return rep, nil
}

func renamed(name string, s series) series { s.name = name; return s }

// poolerPool is a pool of conns connections to dsn in exec mode, each
// worker's statements counted by roundTripCounter.
func poolerPool(ctx context.Context, dsn string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	cfg.ConnConfig.RuntimeParams["application_name"] = poolerApp
	cfg.ConnConfig.Tracer = roundTripCounter{}
	cfg.MaxConns = int32(conns)
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > time.Minute }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return pool, nil
}
