package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// Lock is a lock row as `lockctl ls` and the console show it: what a
// service sees of it (lockdb.LockInfo), how its grant came about and how
// long it has been held, which an operator reads and a service does not.
type Lock struct {
	lockdb.LockInfo
	// GrantKind is how the current (or last) grant was made: acquired, or
	// stolen from PreviousOwner's expired lease.
	GrantKind     string  `db:"grant_kind"`
	PreviousOwner *string `db:"previous_owner"` // the holder before this grant; nil for a key's first
	PreviousToken *int64  `db:"previous_token"` // PreviousOwner's token
	// HeldFor is the database's clock at read time minus AcquiredAt.
	HeldFor time.Duration `db:"held_for"`
}

// lockColumns selects a Lock from the readers' view l
// (distributed_lock_state): store.LockColumns and the listing's own
// columns, from the same clock reading.
const lockColumns = store.LockColumns + `,
	l.grant_kind, l.previous_owner, l.previous_token, l.db_now - l.acquired_at AS held_for`

// getSQL reads one key's Lock.
const getSQL = `SELECT ` + lockColumns + `
FROM distributed_lock_state l
WHERE l.lock_key = $1`

// Get reads key's Lock: the console's detail page of a key outside the
// listed window. found is false when the key has no row.
func Get(ctx context.Context, db store.DBTX, key string) (l Lock, found bool, err error) {
	return maybeOne[Lock](db.Query(ctx, getSQL, key))
}
