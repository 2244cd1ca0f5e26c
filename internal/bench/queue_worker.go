package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// queueJob is what the parent tells one worker process to do.
type queueJob struct {
	DSN         string        `json:"dsn"`
	Schema      string        `json:"schema"`
	Series      string        `json:"series"`
	Key         string        `json:"key"`          // the lock key (locker series; see waiterKey)
	AdvisoryKey int64         `json:"advisory_key"` // the advisory lock (advisory series)
	Process     int           `json:"process"`
	Waiters     int           `json:"waiters"` // in this process
	Hold        time.Duration `json:"hold_ns"`
	Start       time.Time     `json:"start"` // every process begins at this instant
	Stop        time.Time     `json:"stop"`  // no new acquisition begins after it

	// FirstWaiter is the index, over all processes, of this process's
	// first waiter.
	FirstWaiter int `json:"first_waiter,omitempty"`
	// Permits is the semaphore's permits, and the number of mutex keys
	// its comparison spreads the waiters over (semaphore scenario).
	Permits int `json:"permits,omitempty"`
}

// queueGrant is one acquisition, timed on this machine's wall clock (every
// process reads the same one, so grants of different processes can be
// ordered to check that no two holds overlapped).
type queueGrant struct {
	Waiter    string `json:"waiter"`
	Key       string `json:"key"`
	Token     int64  `json:"token,omitempty"` // locker series only
	WaitNs    int64  `json:"wait_ns"`         // from the call to the grant
	Acquired  int64  `json:"acquired"`        // Unix ns when the acquire returned
	Releasing int64  `json:"releasing"`       // Unix ns when the release was called
	Released  int64  `json:"released"`        // Unix ns when it returned
}

// queueWorkerResult is what one worker process reports.
type queueWorkerResult struct {
	Grants []queueGrant `json:"grants"`
	// GrantsPerWaiter counts every waiter of the process, with its
	// grants (0 for a waiter that starved).
	GrantsPerWaiter map[string]int `json:"grants_per_waiter"`
	// Transactions counts statements run outside a transaction block (each
	// its own transaction) and transaction blocks begun, on the waiters'
	// connections, from the start.
	Transactions int64 `json:"transactions"`
	// SetupTransactions counts the transactions of all the process's
	// connections that the backend count leaves out: those before the
	// start, and statements' preparations.
	SetupTransactions int64 `json:"setup_transactions"`
	// UnfinishedWaitNs is the longest wait that the end of the run cut
	// short: a waiter still queued then has waited at least that long.
	UnfinishedWaitNs int64  `json:"unfinished_wait_ns"`
	Error            string `json:"error,omitempty"`
}

// RunQueueWorker is a queue worker process's whole life: read its job from
// in, run its waiters from the job's start to its stop, write the result to
// out. Errors go into the result, so the parent can report them.
func RunQueueWorker(ctx context.Context, in io.Reader, out io.Writer) error {
	var job queueJob
	res := queueWorkerResult{}
	if err := json.NewDecoder(in).Decode(&job); err != nil {
		res.Error = fmt.Sprintf("read job: %v", err)
	} else if r, err := runQueueJob(ctx, job); err != nil {
		res.Error = err.Error()
	} else {
		res = r
	}
	return json.NewEncoder(out).Encode(res)
}

// acquireFunc takes the lock for one waiter; it returns the token (0 where
// there is none) and a function that releases it.
type acquireFunc func(ctx context.Context) (token int64, release func() error, err error)

func runQueueJob(ctx context.Context, job queueJob) (queueWorkerResult, error) {
	cfg, err := queueConnConfig(job)
	if err != nil {
		return queueWorkerResult{}, err
	}
	// txns: the waiters' transactions, as the client-side count reports
	// them; side: those of the process's other connections (a Notifier's, a
	// listener's); setup: what the backend count leaves out (see
	// queue_backend.go): every transaction before the start, and every
	// statement's preparation.
	var txns, side, setup atomic.Int64
	counted := cfg.Copy()
	counted.Tracer = transactionCounter{n: &txns, prepared: &setup}
	sideCfg := cfg.Copy()
	sideCfg.Tracer = transactionCounter{n: &side, prepared: &setup}

	var acquirers []acquireFunc
	var cleanup func()
	switch job.Series {
	case QueueAdvisory:
		acquirers, cleanup, err = advisoryWaiters(ctx, counted, job)
	case QueueLocker:
		acquirers, cleanup, err = lockerWaiters(ctx, sideCfg, counted, job)
	case QueueFloor:
		acquirers, cleanup, err = floorWaiter(ctx, counted, job)
	case QueueNotifyFloor:
		acquirers, cleanup, err = notifyFloorWaiters(ctx, sideCfg, counted, job)
	case SemaphorePermits:
		acquirers, cleanup, err = permitWaiters(ctx, sideCfg, counted, job)
	case SemaphoreMutexKeys:
		acquirers, cleanup, err = mutexKeysWaiters(ctx, sideCfg, counted, job)
	default:
		err = fmt.Errorf("unknown queue series %q", job.Series)
	}
	if err != nil {
		return queueWorkerResult{}, err
	}

	if err := warmUp(ctx, acquirers); err != nil {
		cleanup()
		return queueWorkerResult{}, fmt.Errorf("warm-up: %w", err)
	}
	res := queueWorkerResult{GrantsPerWaiter: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(acquirers))
	time.Sleep(time.Until(job.Start))
	// Setup statements are not part of the measurement.
	setup.Add(txns.Swap(0) + side.Swap(0))
	// The run drains: no acquisition begins after the stop, and one in
	// flight then is served (nobody gives up, so the backend count holds
	// only hand-overs); queueDrainLimit bounds it.
	drainCtx, cancel := context.WithDeadline(ctx, job.Stop.Add(queueDrainLimit))
	defer cancel()
	for i, acquire := range acquirers {
		name := fmt.Sprintf("p%d-w%d", job.Process, i)
		res.GrantsPerWaiter[name] = 0
		wg.Go(func() {
			grants, unfinished, err := runWaiter(drainCtx, job.Stop, name, waiterKey(job, i), acquire, job.Hold)
			errs[i] = err
			mu.Lock()
			res.Grants = append(res.Grants, grants...)
			res.GrantsPerWaiter[name] = len(grants)
			res.UnfinishedWaitNs = max(res.UnfinishedWaitNs, int64(unfinished))
			mu.Unlock()
		})
	}
	wg.Wait()
	cleanup()
	res.Transactions = txns.Load()
	res.SetupTransactions = setup.Load()
	return res, errors.Join(errs...)
}

// warmUp has every waiter take the lock and give it back once, all at
// once, before the start: a service's connections have run its statements
// before its waiters queue in earnest, and a connection's first ones (the
// server parsing them, loading its catalogs, compiling the functions
// behind them) are no part of a hand-over. Every series warms up alike.
func warmUp(ctx context.Context, acquirers []acquireFunc) error {
	errs := make([]error, len(acquirers))
	var wg sync.WaitGroup
	for i, acquire := range acquirers {
		wg.Go(func() {
			_, release, err := acquire(ctx)
			if err == nil {
				err = release()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// queueDrainLimit bounds how long after the stop the acquisitions in
// flight may take to be served.
const queueDrainLimit = 10 * time.Second

// runWaiter takes the lock, holds it, releases it, again and again until
// stop. An acquire ctx cuts short is not an error: unfinished is how long it
// had waited by then.
func runWaiter(ctx context.Context, stop time.Time, name, key string, acquire acquireFunc, hold time.Duration) (grants []queueGrant, unfinished time.Duration, err error) {
	for time.Now().Before(stop) {
		began := time.Now()
		token, release, err := acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return grants, time.Since(began), nil
			}
			return grants, 0, fmt.Errorf("waiter %s: %w", name, err)
		}
		acquired := time.Now()
		time.Sleep(hold)
		releasing := time.Now()
		if err := release(); err != nil {
			return grants, 0, fmt.Errorf("waiter %s: release: %w", name, err)
		}
		grants = append(grants, queueGrant{Waiter: name, Key: key, Token: token, WaitNs: int64(acquired.Sub(began)),
			Acquired: acquired.UnixNano(), Releasing: releasing.UnixNano(), Released: time.Now().UnixNano()})
	}
	return grants, 0, nil
}

// releaseTimeout bounds a release, which runs after the measurement's
// context may have ended.
const releaseTimeout = 10 * time.Second

const (
	advisoryLockSQL   = `SELECT pg_advisory_lock($1)`
	advisoryUnlockSQL = `SELECT pg_advisory_unlock($1)`
)

// advisoryWaiters gives each waiter a session of its own, as a blocking
// pg_advisory_lock needs.
func advisoryWaiters(ctx context.Context, cfg *pgx.ConnConfig, job queueJob) ([]acquireFunc, func(), error) {
	var conns []*pgx.Conn
	cleanup := func() {
		for _, c := range conns {
			c.Close(context.WithoutCancel(ctx))
		}
	}
	var out []acquireFunc
	for range job.Waiters {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("connect: %w", store.Interpret(err))
		}
		conns = append(conns, conn)
		out = append(out, func(ctx context.Context) (int64, func() error, error) {
			if _, err := conn.Exec(ctx, advisoryLockSQL, job.AdvisoryKey); err != nil {
				return 0, nil, err
			}
			return 0, func() error {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
				defer cancel()
				_, err := conn.Exec(rctx, advisoryUnlockSQL, job.AdvisoryKey)
				return err
			}, nil
		})
	}
	return out, cleanup, nil
}

// floorWaiter is the durable floor's one "waiter": a connection of its
// own whose every "grant" is a durably committed one-row UPDATE, and whose
// release writes nothing.
func floorWaiter(ctx context.Context, cfg *pgx.ConnConfig, job queueJob) ([]acquireFunc, func(), error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", store.Interpret(err))
	}
	cleanup := func() { conn.Close(context.WithoutCancel(ctx)) }
	if _, err := conn.Exec(ctx, floorRowSQL, job.AdvisoryKey); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("floor row: %w", store.Interpret(err))
	}
	acquire := func(ctx context.Context) (int64, func() error, error) {
		if _, err := conn.Exec(ctx, floorUpdateSQL, job.AdvisoryKey); err != nil {
			return 0, nil, err
		}
		return 0, func() error { return nil }, nil
	}
	return []acquireFunc{acquire}, cleanup, nil
}

const floorRowSQL = `INSERT INTO bench_floor (id) VALUES ($1) ON CONFLICT DO NOTHING`

// queueLockTTL outlives any hold, so no lease expires during the run.
const queueLockTTL = 30 * time.Second

// lockerWaiters share one pool and one Notifier per process, as a service
// would.
func lockerWaiters(ctx context.Context, side, counted *pgx.ConnConfig, job queueJob) ([]acquireFunc, func(), error) {
	lk, pool, cleanup, err := openWaitersLocker(ctx, side, counted, job)
	if err != nil {
		return nil, nil, err
	}
	return leaseAcquirers(job, "queue", lk, pool, func(ctx context.Context, _ int, owner string) (locker.Lease, error) {
		return waitKey(ctx, lk, pool, job.Key, owner)
	}), cleanup, nil
}

// openWaitersLocker opens what a process's waiters share: a pool of
// counted connections, a Notifier on a side connection and a Locker that
// hears it.
func openWaitersLocker(ctx context.Context, side, counted *pgx.ConnConfig, job queueJob) (*locker.Locker, *pgxpool.Pool, func(), error) {
	poolCfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, nil, nil, err
	}
	poolCfg.ConnConfig = counted
	poolCfg.MaxConns = int32(min(job.Waiters, 16))
	poolCfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > time.Minute }
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pool: %w", store.Interpret(err))
	}
	nctx, stopNotifier := context.WithCancel(ctx)
	notifier := locker.NewNotifier(locker.NotifierConfig{Connect: lockdb.ConnectWith(side)})
	notifierDone := make(chan struct{})
	go func() {
		defer close(notifierDone)
		_ = notifier.Run(nctx)
	}()
	cleanup := func() {
		stopNotifier()
		<-notifierDone
		pool.Close()
	}
	lk, err := locker.New(locker.Config{TTL: queueLockTTL, Notifier: notifier})
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	if err := connectAll(ctx, pool); err != nil {
		cleanup()
		return nil, nil, nil, fmt.Errorf("connect: %w", store.Interpret(err))
	}
	return lk, pool, cleanup, nil
}

// connectAll opens every connection the pool may hold before the run
// starts, as the advisory series' waiters connect theirs: a service's pool
// is open when its waiters queue, and a connection's start-up is no part
// of a hand-over.
func connectAll(ctx context.Context, pool *pgxpool.Pool) error {
	var conns []*pgxpool.Conn
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		// Not Ping, whose statement the counters would not see.
		if _, err := c.Exec(ctx, ";"); err != nil {
			return err
		}
	}
	return nil
}

// leaseAcquirers makes an acquireFunc for each of job's waiters in this
// process: take the lease with acquire (given the waiter's index in the
// process), give it back with lk.Release.
func leaseAcquirers(job queueJob, prefix string, lk *locker.Locker, pool *pgxpool.Pool,
	acquire func(ctx context.Context, i int, owner string) (locker.Lease, error)) []acquireFunc {
	var out []acquireFunc
	for i := range job.Waiters {
		owner := fmt.Sprintf("%s-p%d-w%d", prefix, job.Process, i)
		out = append(out, func(ctx context.Context) (int64, func() error, error) {
			lease, err := acquire(ctx, i, owner)
			if err != nil {
				return 0, nil, err
			}
			return lease.Token, func() error {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
				defer cancel()
				_, err := lk.Release(rctx, pool, lease)
				return err
			}, nil
		})
	}
	return out
}

// transactionCounter counts transactions as the server commits them: a
// statement outside a transaction block is one, a transaction block
// (counted at its BEGIN) is one however many statements it holds. A
// statement counts when it returns without error, so the one the run's end
// cuts short, which grants nothing, is not counted either. With prepared
// set, it also counts there each statement's preparation outside a
// transaction block (pgx's statement cache prepares a statement on a
// connection's first use of it, in a transaction of its own).
type transactionCounter struct{ n, prepared *atomic.Int64 }

// startsTransaction marks, in a query's context, that the connection was
// idle when it began.
type startsTransaction struct{}

func (transactionCounter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return markIdle(ctx, conn)
}

func (c transactionCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if data.Err == nil && ctx.Value(startsTransaction{}) != nil {
		c.n.Add(1)
	}
}

func (transactionCounter) TracePrepareStart(ctx context.Context, conn *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return markIdle(ctx, conn)
}

// TracePrepareEnd counts a preparation that reached the server, whether
// it failed or not (a rollback is a transaction too).
func (c transactionCounter) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, data pgx.TracePrepareEndData) {
	if c.prepared != nil && !data.AlreadyPrepared && ctx.Value(startsTransaction{}) != nil {
		c.prepared.Add(1)
	}
}

func markIdle(ctx context.Context, conn *pgx.Conn) context.Context {
	if conn.PgConn().TxStatus() == 'I' {
		return context.WithValue(ctx, startsTransaction{}, true)
	}
	return ctx
}
