package locker

import "github.com/lockctl/lockctl/internal/lockdb"

// DBTX is what every operation runs on: a *pgxpool.Pool, a *pgx.Conn or
// the caller's pgx.Tx.
type DBTX = lockdb.DBTX

// TxStarter is a DBTX that can open a transaction (Migrate needs one).
type TxStarter = lockdb.TxStarter
