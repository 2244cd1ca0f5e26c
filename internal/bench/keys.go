package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The keys scenario: a set of keys taken at once (locker.Acquire of the set:
// one statement, all or none, and one Release: one more) beside the same
// keys taken one by one (an Acquire per key, then Release per key), each
// worker on keys of its own, interleaved in one run; and how long a
// deadlock takes to be reported, closed one wait after the other and by
// two waits at once.

// KeysOptions configure RunKeys. The zero value runs the default.
type KeysOptions struct {
	// Workers are the concurrency levels measured. Defaults to [1, 8].
	Workers []int
	// Keys in each set. Defaults to 4.
	Keys int
	// Modes the set's keys ask for, in turn: "exclusive", "shared" or
	// "semaphore:N". Defaults to exclusive; any other makes a mixed-mode
	// set, which a build that cannot take one refuses before measuring
	// (ErrMixedSetRefused).
	Modes []string
	// Duration each series runs per round. Defaults to 2s.
	Duration time.Duration
	// Rounds of every series, interleaved. Defaults to 3.
	Rounds int
	// Deadlocks closed each way (one wait after the other, two at once).
	// Defaults to 10.
	Deadlocks int
	// TTL of the leases. Defaults to 30s.
	TTL time.Duration
	// Progress receives one line per finished series; nil: silent.
	Progress io.Writer

	modes []locker.Key // Modes parsed
}

func (o KeysOptions) withDefaults() (KeysOptions, error) {
	if len(o.Workers) == 0 {
		o.Workers = []int{1, 8}
	}
	o.Keys = cmp.Or(o.Keys, 4)
	o.Duration = cmp.Or(o.Duration, 2*time.Second)
	o.Rounds = cmp.Or(o.Rounds, 3)
	o.Deadlocks = cmp.Or(o.Deadlocks, 10)
	o.TTL = cmp.Or(o.TTL, 30*time.Second)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if len(o.Modes) == 0 {
		o.Modes = []string{locker.ModeExclusive}
	}
	o.modes = make([]locker.Key, len(o.Modes))
	for i, m := range o.Modes {
		var err error
		if o.modes[i], err = keyMode(m); err != nil {
			return o, err
		}
	}
	for _, w := range o.Workers {
		if w < 1 || w > maxWorkers {
			return o, optionErrorf("workers must be between 1 and %d, got %d", maxWorkers, w)
		}
	}
	switch {
	case o.Keys < 2 || o.Keys > locker.MaxKeys:
		return o, optionErrorf("keys must be between 2 and %d, got %d", locker.MaxKeys, o.Keys)
	case o.Duration < 10*time.Millisecond:
		return o, optionErrorf("duration %s is too short (at least 10ms)", o.Duration)
	case o.Rounds < 1 || o.Deadlocks < 1:
		return o, optionErrorf("rounds and deadlocks must be at least 1")
	case o.TTL < time.Second:
		return o, optionErrorf("TTL %s is too short: leases must outlive a cycle (at least 1s)", o.TTL)
	}
	return o, nil
}

// The keys scenario's series and its claims.
const (
	SeriesSetAtOnce   = "set at once"
	SeriesSetOneByOne = "set one by one"
	keysApp           = "lockctl_bench_keys"
	keysWantRatio     = 2.0
	deadlockWantMax   = time.Second
	// deadlockGiveUp ends a wait the detection never refused: it then
	// counts as this long, far past the claim.
	deadlockGiveUp = 5 * time.Second
)

// RunKeys measures on the server dsn names, in a schema of its own.
func RunKeys(ctx context.Context, dsn string, opts KeysOptions) (*KeysReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	set := setKeys("", opts.Keys, opts.modes)
	rep := &KeysReport{Started: began, NumCPU: runtime.NumCPU(), Keys: opts.Keys, Modes: setModes(set), Mixed: mixed(set),
		Duration: opts.Duration, Rounds: opts.Rounds, LoadBefore: loadAverage()}
	// The pool serves the deadlock rounds: four waits and holds at once.
	t, err := openTarget(ctx, dsn, 4)
	if err != nil {
		return nil, err
	}
	defer t.close(ctx)
	if rep.Server, err = t.serverInfo(ctx); err != nil {
		return nil, err
	}
	probeConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: connect probe: %w", store.Interpret(err))
	}
	defer probeConn.Close(context.WithoutCancel(ctx))
	probe := &serverProbe{conn: probeConn, appName: t.appName, every: 20 * time.Millisecond}
	lk, err := locker.New(locker.Config{TTL: opts.TTL})
	if err != nil {
		return nil, err
	}
	if err := tryMixedSet(ctx, lk, t.pool, setKeys("keys-probe", opts.Keys, opts.modes)); err != nil {
		return nil, err
	}
	var samples []sample
	for _, workers := range opts.Workers {
		pool, err := t.openPool(ctx, workers)
		if err != nil {
			return nil, err
		}
		chkSet, chkOne := newChecker(), newChecker()
		all := []series{setAtOnceSeries(lk, pool, opts.Keys, opts.modes, chkSet), setOneByOneSeries(lk, pool, opts.Keys, opts.modes, chkOne)}
		checkers := map[string]*checker{SeriesSetAtOnce: chkSet, SeriesSetOneByOne: chkOne}
		for _, s := range all { // warm-up, not reported: connections, first rows
			if _, err := runSeries(ctx, s, ScenarioSolo, workers, soloKeys, min(opts.Duration/4, 300*time.Millisecond), nil, checkers[s.name]); err != nil {
				pool.Close()
				return nil, err
			}
		}
		for round := range opts.Rounds {
			for _, s := range rotate(all, round) {
				smp, err := runSeries(ctx, s, ScenarioSolo, workers, soloKeys, opts.Duration, probe, checkers[s.name])
				if err != nil {
					pool.Close()
					return nil, err
				}
				smp.round = round
				samples = append(samples, smp)
				fmt.Fprintf(opts.Progress, "keys round %d/%d  %2d workers  %-16s %8.0f sets/s\n",
					round+1, opts.Rounds, workers, s.name, float64(smp.granted)/smp.elapsed.Seconds())
			}
		}
		pool.Close()
	}
	rep.summarize(samples, opts.Workers)
	for _, together := range []bool{false, true} {
		d, err := measureDeadlocks(ctx, t.pool, opts, together)
		if err != nil {
			return nil, err
		}
		rep.Deadlocks = append(rep.Deadlocks, d)
		fmt.Fprintf(opts.Progress, "deadlocks %-22s p50 %s, max %s\n", d.Way, d.P50, d.Max)
	}
	rep.judgeDeadlocks()
	rep.Took = time.Since(began)
	rep.LoadAfter = loadAverage()
	return rep, nil
}

// setAtOnceSeries takes the worker's n keys, in modes, in one a set's
// Acquire and gives them back in one Release: a cycle is the whole set.
func setAtOnceSeries(lk *locker.Locker, pool *pgxpool.Pool, n int, modes []locker.Key, chk *checker) series {
	return series{name: SeriesSetAtOnce, cycle: func(ctx context.Context, worker int, key string) (bool, error) {
		o := owner(worker)
		leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: setKeys(key, n, modes), Owner: o})
		if errors.Is(err, locker.ErrHeld) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, l := range leases {
			chk.granted(l.Key, o, l.Token)
			chk.releasing(l.Key, o)
		}
		if _, err := lk.Release(ctx, pool, leases...); err != nil {
			if errors.Is(err, locker.ErrNotHeld) {
				chk.releaseLost()
				return true, nil
			}
			return true, err
		}
		return true, nil
	}}
}

// setOneByOneSeries takes the same keys, in the same modes, with one
// Acquire each, in order, and releases them one by one: what a service
// does without sets.
func setOneByOneSeries(lk *locker.Locker, pool *pgxpool.Pool, n int, modes []locker.Key, chk *checker) series {
	return series{name: SeriesSetOneByOne, cycle: func(ctx context.Context, worker int, key string) (bool, error) {
		o := owner(worker)
		var held []locker.Lease
		release := func() error {
			for _, l := range held {
				chk.releasing(l.Key, o)
				if _, err := lk.Release(ctx, pool, l); err != nil {
					if errors.Is(err, locker.ErrNotHeld) {
						chk.releaseLost()
						continue
					}
					return err
				}
			}
			return nil
		}
		for _, k := range setKeys(key, n, modes) {
			l, err := oneLease(lk.Acquire(ctx, pool, locker.Request{Keys: []locker.Key{k}, Owner: o}))
			if errors.Is(err, locker.ErrHeld) {
				return false, release()
			}
			if err != nil {
				return false, errors.Join(err, release())
			}
			chk.granted(k.Name, o, l.Token)
			held = append(held, l)
		}
		return true, release()
	}}
}
