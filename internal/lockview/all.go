package lockview

import (
	"context"

	"github.com/lockctl/lockctl/store"
)

// listAllSQL reads every lock row with one clock_timestamp() reading, so the
// remaining times of all rows are measured at the same instant.
const listAllSQL = `SELECT ` + store.LockColumns + `
FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c
ORDER BY l.lock_key`

// ListAll returns every lock row, ordered by key: `lockctl ls` prints the
// whole table. It is meant for scripts and small tables; the console reads
// windows of the table instead.
func ListAll(ctx context.Context, db store.DBTX) ([]store.Lock, error) {
	return collect[store.Lock](db.Query(ctx, listAllSQL))
}
