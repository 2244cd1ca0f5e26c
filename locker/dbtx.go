package locker

import "github.com/lockctl/lockctl/internal/lockdb"

// DBTX is what every operation runs on: an interface of pgx's Exec, Query
// and QueryRow, with their signatures. *pgxpool.Pool, *pgx.Conn and pgx.Tx
// all satisfy it, so a lock operation can run inside the caller's own
// transaction.
type DBTX = lockdb.DBTX

// TxStarter is a DBTX that can open a transaction (or a savepoint, for a
// pgx.Tx): Migrate and Prune need one. *pgxpool.Pool and *pgx.Conn are
// TxStarters.
type TxStarter = lockdb.TxStarter
