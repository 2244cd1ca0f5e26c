package store

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// DBTX is what every store function needs (locker's DBTX: one interface):
// *pgxpool.Pool, *pgx.Conn and pgx.Tx all satisfy it, so a caller can run
// lock operations inside its own transaction.
type DBTX = lockdb.DBTX

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
