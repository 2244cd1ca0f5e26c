package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/store"
)

// Backend transactions are counted on the server: every transaction any
// backend of the bench database committed or rolled back
// (pg_stat_database), the waiters', the Notifiers', and those a LISTENing
// backend runs to read the notification queue each time a NOTIFY signals
// it, which no client sees.
//
// The server publishes a backend's counts lazily: after a transaction, when
// it is idle and its last report is a second old, else ten seconds later
// (PGSTAT_MIN_INTERVAL, PGSTAT_IDLE_INTERVAL), and always when it exits. So
// the count spans the worker processes' whole lives, from before they
// connect until their last backend is gone, when everything is published.
// From it go what is not a hand-over's: each backend's start-up (one
// transaction per session, pg_stat_database.sessions), the worker
// connections' statements before the start and each statement's first
// preparation on a connection (a transaction of its own; both counted by
// the workers' tracer), and the observer's own statements. The run drains
// (waiters queued at its end are served, nobody gives up), so nothing is
// left to do when the workers close their connections. Autovacuum, or
// another client of the database, would count too.

// backendStats is a reading of the bench database's counters.
type backendStats struct {
	transactions int64 // xact_commit + xact_rollback
	sessions     int64
}

// backendObserver reads the counters on a connection of its own, which
// counts its own transactions so they can be taken out.
type backendObserver struct {
	conn *pgx.Conn
	own  atomic.Int64
	// workerApp marks the worker processes' backends.
	workerApp string
}

// openBackendObserver connects the observer, or returns nil when the
// server cannot be observed (before PostgreSQL 15: no
// pg_stat_force_next_flush; or the role may not call it): the report then
// has no backend counts.
func openBackendObserver(ctx context.Context, dsn, workerApp string) (*backendObserver, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	o := &backendObserver{workerApp: workerApp}
	cfg.Tracer = transactionCounter{n: &o.own, prepared: &o.own}
	if o.conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("bench: connect: %w", store.Interpret(err))
	}
	if _, err := o.conn.Exec(ctx, forceFlushSQL); err != nil {
		o.close(ctx)
		return nil, nil
	}
	return o, nil
}

func (o *backendObserver) close(ctx context.Context) {
	if o != nil {
		_ = o.conn.Close(context.WithoutCancel(ctx))
	}
}

const (
	// forceFlushSQL publishes the observer's own counts as soon as the
	// statement ends (it is idle before the next). It reads a table: a
	// backend publishes its transaction counts only along with other
	// pending counts, and a statement that read no table leaves none.
	forceFlushSQL = `SELECT pg_stat_force_next_flush() FROM pg_database WHERE datname = current_database()`
	// backendStatsSQL runs in a transaction of its own, which reads the
	// counters afresh (stats_fetch_consistency caches them within one).
	backendStatsSQL = `
SELECT xact_commit + xact_rollback, sessions FROM pg_stat_database WHERE datname = current_database()`
	workerBackendsSQL = `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`
)

// read waits until no worker backend is left (each published its counts
// as it exited), then reads the counters. own is the observer's
// transactions before the reading's, all published in it.
func (o *backendObserver) read(ctx context.Context) (s backendStats, own int64, err error) {
	deadline := time.Now().Add(workersGoneTimeout)
	for {
		var n int64
		if err := o.conn.QueryRow(ctx, workerBackendsSQL, o.workerApp).Scan(&n); err != nil {
			return s, 0, err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return s, 0, fmt.Errorf("%d worker backends still there after %s", n, workersGoneTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := o.conn.Exec(ctx, forceFlushSQL); err != nil {
		return s, 0, err
	}
	own = o.own.Load()
	err = o.conn.QueryRow(ctx, backendStatsSQL).Scan(&s.transactions, &s.sessions)
	return s, own, err
}

// workersGoneTimeout bounds the wait for a worker process's backends to
// end after it exited.
const workersGoneTimeout = 10 * time.Second

// measureBackend brackets run with readings of the counters and returns
// the backend transactions of the run that are not the workers' setup
// (setup: their count of it). Without an observer it only runs run, and
// returns -1.
func (o *backendObserver) measureBackend(ctx context.Context, run func() (setup int64, err error)) (int64, error) {
	if o == nil {
		_, err := run()
		return -1, err
	}
	before, ownBefore, err := o.read(ctx)
	if err != nil {
		return 0, fmt.Errorf("read pg_stat_database: %w", err)
	}
	setup, err := run()
	if err != nil {
		return 0, err
	}
	after, ownAfter, err := o.read(ctx)
	if err != nil {
		return 0, fmt.Errorf("read pg_stat_database: %w", err)
	}
	n := after.transactions - before.transactions - (after.sessions - before.sessions) - (ownAfter - ownBefore) - setup
	if n < 0 {
		return 0, errors.New("fewer backend transactions than the workers' setup: the counters were reset")
	}
	return n, nil
}
