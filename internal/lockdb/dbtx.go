package lockdb

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DBTX is what every lock statement runs on: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all satisfy it, so a lock operation can run inside the caller's own
// transaction. locker.DBTX and store.DBTX are this type.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// TxStarter is a DBTX that can open a transaction (or a savepoint, for a
// pgx.Tx): migrating and pruning need one. locker.TxStarter and
// store.TxStarter are this type.
type TxStarter interface {
	DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}
