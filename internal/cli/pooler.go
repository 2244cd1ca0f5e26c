package cli

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/store"
)

// fitPooler returns a pool that works through the connection pooler pool
// may reach the server through. Behind one, pgx's default query exec mode
// (named prepared statements, cached per connection) fails at random under
// transaction pooling, so when the connection string chose no mode, pool
// is closed and reopened in exec mode, which sends each statement whole.
// A mode the connection string chose is kept (PgBouncer 1.21+ with
// max_prepared_statements runs the default mode), except describe_exec,
// which a transaction pooler can make bind one client's arguments to
// another client's statement: that is refused.
func fitPooler(ctx context.Context, pool *pgxpool.Pool, dsn string) (*pgxpool.Pool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return pool, nil // Ping just passed; let the command meet the error
	}
	pooled, err := store.BehindPooler(ctx, conn.Conn())
	conn.Release()
	if err != nil || !pooled {
		return pool, nil
	}
	cfg := pool.Config()
	mode := cfg.ConnConfig.DefaultQueryExecMode
	switch {
	case !chosesExecMode(dsn):
		pool.Close()
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		return pgxpool.NewWithConfig(ctx, cfg)
	case mode == pgx.QueryExecModeDescribeExec:
		pool.Close()
		return nil, usagef("default_query_exec_mode=describe_exec is unsafe behind a connection pooler (a transaction pooler can bind one client's arguments to another's statement): use default_query_exec_mode=exec (see docs/pooling.md)")
	}
	return pool, nil
}

// chosesExecMode reports whether dsn sets default_query_exec_mode.
func chosesExecMode(dsn string) bool {
	return strings.Contains(dsn, "default_query_exec_mode")
}
