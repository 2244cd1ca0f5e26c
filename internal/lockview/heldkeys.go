package lockview

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/store"
)

// heldKeysSQL reads, in key order, the keys held or expiring
// (distributed_lock_state) that start with $1. In key order through the
// primary key, it stops after $2 rows whatever the size of the table.
const heldKeysSQL = `
SELECT l.lock_key
FROM distributed_lock_state l
WHERE starts_with(l.lock_key, $1) AND l.state IN ('held', 'expiring')
ORDER BY l.lock_key
LIMIT $2`

// HeldKeys lists up to limit held keys that start with prefix, in key
// order: what shell completion offers for a command that acts on a lease.
func HeldKeys(ctx context.Context, db store.DBTX, prefix string, limit int) ([]string, error) {
	return readKeys(ctx, db, heldKeysSQL, prefix, limit)
}

// delayedKeysSQL reads, in key order, the keys in their lock-delay
// (lockdb.StateDelayed) that start with $1, at most $2 of them.
const delayedKeysSQL = `
SELECT l.lock_key
FROM distributed_lock_state l
WHERE starts_with(l.lock_key, $1) AND l.state = 'delayed'
ORDER BY l.lock_key
LIMIT $2`

// DelayedKeys lists up to limit keys in their lock-delay that start with
// prefix, in key order: what completion offers for `lockctl end-delay`.
func DelayedKeys(ctx context.Context, db store.DBTX, prefix string, limit int) ([]string, error) {
	return readKeys(ctx, db, delayedKeysSQL, prefix, limit)
}

// readKeys runs a key listing (query of $1 the prefix, $2 the limit) and
// collects its keys.
func readKeys(ctx context.Context, db store.DBTX, query, prefix string, limit int) ([]string, error) {
	rows, err := db.Query(ctx, query, prefix, limit)
	if err != nil {
		return nil, store.Interpret(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, store.Interpret(err)
	}
	return keys, nil
}
