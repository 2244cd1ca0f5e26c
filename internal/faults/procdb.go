package faults

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errKilled is what a killed process's database calls return.
var errKilled = errors.New("faults: the process was killed")

// procDB is the database as one process of a session worker reaches it,
// so that the injector can kill that process as SIGKILL would: a call in
// flight is cut off (its context ends, as the killed process's sockets
// close; what the server already has runs to its end), and every later
// call fails without reaching the database. The session's own goroutine
// (heartbeats, bindings) runs on it, so nothing of the process is sent
// after the kill.
type procDB struct {
	db   *pgxpool.Pool
	dead context.Context // done once killed
}

// call is ctx cut off at the kill, and the function that lets it go.
func (p *procDB) call(ctx context.Context) (context.Context, func(), error) {
	if p.dead.Err() != nil {
		return nil, nil, errKilled
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.dead, cancel)
	return ctx, func() { stop(); cancel() }, nil
}

func (p *procDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, done, err := p.call(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer done()
	return p.db.Exec(ctx, sql, args...)
}

func (p *procDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, done, err := p.call(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := p.db.Query(ctx, sql, args...)
	if err != nil {
		done()
		return nil, err
	}
	return procRows{Rows: rows, done: done}, nil
}

func (p *procDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, done, err := p.call(ctx)
	if err != nil {
		return errRow{err}
	}
	return procRow{row: p.db.QueryRow(ctx, sql, args...), done: done}
}

// procRows and procRow let the call's context go once the result is read.
type procRows struct {
	pgx.Rows
	done func()
}

func (r procRows) Close() {
	r.Rows.Close()
	r.done()
}

type procRow struct {
	row  pgx.Row
	done func()
}

func (r procRow) Scan(dest ...any) error {
	defer r.done()
	return r.row.Scan(dest...)
}
