package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Run benchmarks on the server at dsn, in a schema of its own that it
// creates, migrates (store.Migrate) and drops at the
// end. The server's other schemas are not touched.
func Run(ctx context.Context, dsn string, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	maxW := slices.Max(opts.Workers)
	t, err := openTargetRTT(ctx, dsn, maxW, opts.RTT)
	if err != nil {
		return nil, err
	}
	defer t.close(ctx)

	rep := &Report{Started: began, Options: summarize(opts), NumCPU: runtime.NumCPU(), LoadBefore: loadAverage()}
	if rep.Server, err = t.serverInfo(ctx); err != nil {
		return nil, err
	}
	probeConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: connect probe: %w", store.Interpret(err))
	}
	defer probeConn.Close(context.WithoutCancel(ctx))
	probe := &serverProbe{conn: probeConn, appName: t.appName, every: 20 * time.Millisecond}

	checkers := map[string]*checker{}
	lockers := map[string]*locker.Locker{}
	for _, v := range []struct {
		name string
		cfg  locker.Config
	}{
		{SeriesLocker, locker.Config{TTL: opts.TTL}},
		{SeriesLockerDurable, locker.Config{TTL: opts.TTL, DurableRelease: true}},
		{SeriesLockerLogged, locker.Config{TTL: opts.TTL, LogGrants: true}},
	} {
		lk, err := locker.New(v.cfg)
		if err != nil {
			return nil, err
		}
		lockers[v.name] = lk
	}
	for _, name := range []string{SeriesReference, SeriesReferenceInline, SeriesLocker, SeriesLockerDurable, SeriesLockerLogged, SeriesStatements, SeriesUpsert, SeriesFloorFunction} {
		checkers[name] = newChecker()
	}

	// w workers share a pool of w connections, as pgbench -c w would, not
	// the largest level's pool: with idle connections to spare, a worker's
	// statements can wander over backends whose caches have gone cold. That
	// cost the locker (a statement per call) more than the reference (a
	// transaction stays on one connection) on hot keys, in alternated runs
	// (BENCHMARKS.md); without contention the difference was within noise.
	levels := map[int]levelSeries{}
	for _, w := range opts.Workers {
		pool := t.pool
		if w != maxW {
			if pool, err = t.openPool(ctx, w); err != nil {
				return nil, err
			}
			defer pool.Close()
		}
		lv := newLevelSeries(pool, lockers, checkers, opts.TTL)
		// Warm-up, not reported: connections, prepared statements, first rows.
		for _, s := range lv.solo {
			if _, err := runSeries(ctx, s, ScenarioSolo, w, soloKeys, min(opts.Duration/4, 300*time.Millisecond), nil, checkers[s.name]); err != nil {
				return nil, err
			}
		}
		levels[w] = lv
	}

	var samples []sample
	for round := range opts.Rounds {
		for _, w := range opts.Workers {
			for _, sc := range []struct {
				name   string
				series []series
				keys   keyChooser
			}{{ScenarioSolo, levels[w].solo, soloKeys}, {ScenarioHot, levels[w].hot, hotKeys(opts.HotKeys)}} {
				// Rotate the order each round so no series always runs
				// right after the same neighbour.
				order := rotate(sc.series, round)
				for _, s := range order {
					smp, err := runSeries(ctx, s, sc.name, w, sc.keys, opts.Duration, probe, checkers[s.name])
					if err != nil {
						return nil, err
					}
					smp.round = round
					samples = append(samples, smp)
					fmt.Fprintf(opts.Progress, "round %d/%d  %-13s %2d workers  %-12s %8.0f cycles/s\n",
						round+1, opts.Rounds, sc.name, w, s.name, float64(smp.granted)/smp.elapsed.Seconds())
				}
			}
		}
	}
	rep.Results = aggregate(samples, opts)
	rep.Ratios = ratios(rep.Results, samples)
	rep.Targets = targets(rep.Ratios)

	if opts.KeepaliveLocks > 0 {
		fmt.Fprintf(opts.Progress, "keepalive: %d locks, TTL %s, measuring %s\n", opts.KeepaliveLocks, opts.KeepaliveTTL, opts.KeepaliveFor)
		ka, err := measureKeepalive(ctx, t.pool, opts.KeepaliveLocks, opts.KeepaliveTTL, opts.KeepaliveFor)
		if err != nil {
			return nil, err
		}
		rep.Keepalive = &ka
	}
	rep.Took = time.Since(began)
	rep.LoadAfter = loadAverage()
	return rep, nil
}

// loadAverage is the first three fields of /proc/loadavg ("" elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// levelSeries are the series of one concurrency level, on its pool: hot
// for the contended scenario, solo (hot plus the floors) without contention.
type levelSeries struct{ solo, hot []series }

func newLevelSeries(pool *pgxpool.Pool, lockers map[string]*locker.Locker, checkers map[string]*checker, ttl time.Duration) levelSeries {
	hot := []series{
		ownerLockSeries(SeriesReference, reference{pool: pool, ttl: ttl}, checkers[SeriesReference]),
		ownerLockSeries(SeriesReferenceInline, reference{pool: pool, ttl: ttl, inline: true}, checkers[SeriesReferenceInline]),
		ownerLockSeries(SeriesUpsert, upsert{pool: pool, ttl: ttl}, checkers[SeriesUpsert]),
	}
	for _, name := range []string{SeriesLocker, SeriesLockerDurable, SeriesLockerLogged} {
		hot = append(hot, lockerSeries(name, lockers[name], pool, checkers[name]))
	}
	hot = append(hot, tokenLockSeries(SeriesStatements, stmtLocker{pool: pool, ttl: ttl}, checkers[SeriesStatements]),
		tokenLockSeries(SeriesFloorFunction, floorFunc{pool: pool, ttl: ttl}, checkers[SeriesFloorFunction]))
	solo := append(slices.Clone(hot), commitFloorSeries(pool), netFloorSeries(pool))
	return levelSeries{solo: solo, hot: hot}
}

// rotate returns a copy of s that starts at s[by mod len(s)], so the order
// of the series changes from round to round.
func rotate[T any](s []T, by int) []T {
	if len(s) == 0 {
		return nil
	}
	by %= len(s)
	return append(slices.Clone(s[by:]), s[:by]...)
}
