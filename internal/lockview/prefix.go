package lockview

import (
	"context"

	"github.com/lockctl/lockctl/store"
)

// listPrefixSQL reads the lock rows whose key starts with $1 (every row
// when $1 is empty) with one clock_timestamp() reading, so the remaining
// times of all rows are measured at the same instant. starts_with needs no
// escaping of % and _, unlike LIKE. With the prefix bound, the planner
// folds the empty-prefix test away: a prefix gets the plan starts_with
// alone gets (a range of the primary key under the C collation).
const listPrefixSQL = `SELECT ` + store.LockColumns + `
FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c
WHERE ($1 = '' OR starts_with(l.lock_key, $1))
ORDER BY l.lock_key`

// ListPrefix returns the lock rows whose key starts with prefix, ordered by
// key ("" returns every row): `lockctl ls` prints them. It is meant for
// scripts and small tables; the console reads windows of the table instead.
func ListPrefix(ctx context.Context, db store.DBTX, prefix string) ([]store.Lock, error) {
	return collect[store.Lock](db.Query(ctx, listPrefixSQL, prefix))
}
