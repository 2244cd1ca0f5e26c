package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBTX is what every store function needs: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all satisfy it, so a caller can run lock operations inside its own
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// standalone reports whether a statement run on db is a transaction of its
// own: a pool (each statement on a connection of its own, outside any
// transaction) or a connection that is not inside a transaction, as its
// server last reported. A pgx.Tx, a connection in a transaction, and any
// other DBTX (a wrapper whose state is unknown) are not.
func standalone(db DBTX) bool {
	switch d := db.(type) {
	case *pgxpool.Pool:
		return true
	case *pgxpool.Conn:
		return d.Conn().PgConn().TxStatus() == 'I'
	case *pgx.Conn:
		return d.PgConn().TxStatus() == 'I'
	default:
		return false
	}
}
