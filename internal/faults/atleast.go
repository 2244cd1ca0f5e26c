package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/history"
	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// AtLeastKey is the key the at-least workers run their job under.
const AtLeastKey = "atleast-0"

// atLeastClient numbers the at-least workers' clients in the history.
const atLeastClient = 2000

// atLeastJobs are workers that run a scheduled job as every node of a
// fleet would: each tries AtLeastKey, held at least period
// (locker.Request.AtLeast), does a few milliseconds of work and releases,
// so most releases come before the at-least point and keep the key. Their
// grants and releases are in the history (the lock contract holds for
// them as for any lease); each release that left the key kept, as read
// back from the row, is a fact CheckAtLeast holds the event log to: no
// grant of the key before that point.
type atLeastJobs struct {
	lk     *locker.Locker
	db     *pgxpool.Pool
	period time.Duration
	n      int
	rec    *history.Recorder

	mu   sync.Mutex
	kept []history.Kept
}

// newAtLeastJobs makes n workers on db, their leases as lc makes them,
// held at least period. Releases wait for the disk (DurableRelease): a
// crash must not lose a release whose kept row the checker relies on.
func newAtLeastJobs(db *pgxpool.Pool, lc locker.Config, period time.Duration, n int, rec *history.Recorder) (*atLeastJobs, error) {
	lc.LogGrants, lc.DurableRelease = true, true
	lk, err := locker.New(lc)
	if err != nil {
		return nil, err
	}
	return &atLeastJobs{lk: lk, db: db, period: period, n: n, rec: rec}, nil
}

// run runs the workers until ctx ends.
func (j *atLeastJobs) run(ctx context.Context, seed uint64) {
	if j == nil {
		return
	}
	var wg sync.WaitGroup
	for i := range j.n {
		rng := rand.New(rand.NewPCG(seed, uint64(atLeastClient+i)))
		wg.Go(func() { j.runJobs(ctx, atLeastClient+i, fmt.Sprintf("node-%d", i), rng) })
	}
	wg.Wait()
}

// runJobs is one node's timer: every 5 to 25 ms it tries to run the job.
func (j *atLeastJobs) runJobs(ctx context.Context, client int, owner string, rng *rand.Rand) {
	for ctx.Err() == nil {
		sleepCtx(ctx, time.Duration(5+rng.IntN(20))*time.Millisecond)
		op := history.Op{Client: client, Kind: history.Grant, Key: AtLeastKey, Owner: owner, Call: j.rec.Now()}
		leases, err := j.lk.Acquire(ctx, j.db, locker.Request{Keys: locker.Keys(AtLeastKey), Owner: owner, AtLeast: j.period})
		op.Return = j.rec.Now()
		op.Result, op.Err = history.GrantResultOf(err)
		if err == nil {
			op.Granted(leases[0])
		}
		j.rec.Add(op)
		if err != nil {
			continue
		}
		lease := leases[0]
		sleepCtx(ctx, time.Duration(rng.IntN(10))*time.Millisecond) // the job
		rel := history.Op{Client: client, Kind: history.Release, Key: AtLeastKey, Owner: owner, Token: lease.Token, Call: j.rec.Now()}
		_, err = j.lk.Release(context.WithoutCancel(ctx), j.db, lease)
		rel.Return = j.rec.Now()
		rel.Result, rel.Err = history.ResultOf(err)
		j.rec.Add(rel)
		if err == nil {
			j.readKept(ctx, lease)
		}
	}
}

// readKept records lease's release as kept when the key's row, read after
// it, is kept with lease's token.
func (j *atLeastJobs) readKept(ctx context.Context, lease locker.Lease) {
	row, found, err := store.Get[lockdb.LockInfo](context.WithoutCancel(ctx), j.db, AtLeastKey)
	if err != nil || !found || row.State() != lockdb.StateKept || row.Token != lease.Token {
		return
	}
	j.mu.Lock()
	j.kept = append(j.kept, history.Kept{Key: AtLeastKey, Token: lease.Token, KeptUntil: *row.KeptUntil})
	j.mu.Unlock()
}

// check holds the event log to the kept releases (none without workers).
func (j *atLeastJobs) check(obs history.Observed) []string {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return history.CheckAtLeast(j.kept, obs)
}

// keptCount is how many releases kept the key.
func (j *atLeastJobs) keptCount() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.kept)
}

// scheduledPool is the election and at-least workers' pool: a connection
// for each candidate's wait and each node's job, named for the injector
// (faults-sched), whose restarts reach it as every connection.
func scheduledPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = 16
	pc.ConnConfig.RuntimeParams["application_name"] = "faults-sched"
	return pgxpool.NewWithConfig(ctx, pc)
}

// startScheduled makes the suite's election and at-least workers as cfg
// asks (nil when it asks for none), their leases as lc makes them.
func startScheduled(db *pgxpool.Pool, dsn string, cfg Config, lc locker.Config, rec *history.Recorder) (*elections, *atLeastJobs, error) {
	var e *elections
	var j *atLeastJobs
	var err error
	if cfg.ElectionWorkers > 0 {
		if e, err = newElections(db, dsn, lc, cfg.ElectionWorkers, rec); err != nil {
			return nil, nil, err
		}
	}
	if cfg.AtLeastWorkers > 0 {
		if j, err = newAtLeastJobs(db, lc, cfg.AtLeast, cfg.AtLeastWorkers, rec); err != nil {
			return nil, nil, err
		}
	}
	return e, j, nil
}
