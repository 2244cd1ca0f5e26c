package lockview

import (
	"context"

	"github.com/lockctl/lockctl/store"
)

// listPrefixSQL is listAllSQL for the keys that start with $1.
// starts_with needs no escaping of % and _, unlike LIKE.
const listPrefixSQL = `SELECT ` + store.LockColumns + `
FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c
WHERE starts_with(l.lock_key, $1)
ORDER BY l.lock_key`

// ListPrefix returns the lock rows whose key starts with prefix, ordered by
// key ("" returns every row, as ListAll).
func ListPrefix(ctx context.Context, db store.DBTX, prefix string) ([]store.Lock, error) {
	if prefix == "" {
		return ListAll(ctx, db)
	}
	return collect[store.Lock](db.Query(ctx, listPrefixSQL, prefix))
}
