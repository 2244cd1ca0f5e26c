package faults

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// frozenDB is a DBTX whose calls can be held up for a while, as if the
// network to the database stalled: a zombie's keepalive cannot renew while
// the zombie sleeps. A held-up call returns early only when its context ends.
type frozenDB struct {
	db *pgxpool.Pool

	mu    sync.Mutex
	until time.Time
	// The last call's start and end on this process's clock, so a lease
	// end can be compared with the renewal the keepalive last made.
	lastStart, lastEnd time.Time
}

func (f *frozenDB) started() {
	f.mu.Lock()
	f.lastStart, f.lastEnd = time.Now(), time.Time{}
	f.mu.Unlock()
}

func (f *frozenDB) ended() {
	f.mu.Lock()
	f.lastEnd = time.Now()
	f.mu.Unlock()
}

func (f *frozenDB) lastCall() (start, end time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastStart, f.lastEnd
}

func (f *frozenDB) freezeFor(d time.Duration) {
	f.mu.Lock()
	f.until = time.Now().Add(d)
	f.mu.Unlock()
}

func (f *frozenDB) wait(ctx context.Context) error {
	f.mu.Lock()
	d := time.Until(f.until)
	f.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (f *frozenDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	f.started()
	defer f.ended()
	if err := f.wait(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return f.db.Exec(ctx, sql, args...)
}

func (f *frozenDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	f.started()
	if err := f.wait(ctx); err != nil {
		f.ended()
		return nil, err
	}
	rows, err := f.db.Query(ctx, sql, args...)
	if err != nil {
		f.ended()
		return nil, err
	}
	return timedRows{Rows: rows, f: f}, nil
}

func (f *frozenDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	f.started()
	if err := f.wait(ctx); err != nil {
		f.ended()
		return errRow{err}
	}
	return timedRow{row: f.db.QueryRow(ctx, sql, args...), f: f}
}

// timedRows and timedRow mark the end of a call when its result is read.
type timedRows struct {
	pgx.Rows
	f *frozenDB
}

func (r timedRows) Close() {
	r.Rows.Close()
	r.f.ended()
}

type timedRow struct {
	row pgx.Row
	f   *frozenDB
}

func (r timedRow) Scan(dest ...any) error {
	defer r.f.ended()
	return r.row.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// setTimeoutSQL sets the session's statement_timeout (a bound value).
const setTimeoutSQL = `SELECT set_config('statement_timeout', $1, false)`

// workerPool opens a pool whose sessions are named app (so the injector can
// find them in pg_stat_activity) and run with the statement_timeout in
// timeoutMs (0: none), applied when a connection is taken from the pool.
func workerPool(ctx context.Context, dsn, app string, maxConns int32, timeoutMs func() int64) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	var applied sync.Map // *pgx.Conn → int64
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		want := timeoutMs()
		if v, ok := applied.Load(c); ok && v.(int64) == want {
			return true, nil
		}
		if _, err := c.Exec(ctx, setTimeoutSQL, strconv.FormatInt(want, 10)+"ms"); err != nil {
			return false, err // a broken connection: drop it and fail the call
		}
		applied.Store(c, want)
		return true, nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) { applied.Delete(c) }
	return pgxpool.NewWithConfig(ctx, cfg)
}
