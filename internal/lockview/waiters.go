package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/store"
)

// Waiter is one live waiter record.
type Waiter struct {
	ID           int64         `db:"waiter_id"`
	Key          string        `db:"lock_key"`
	Owner        string        `db:"owner_id"`
	WaitingSince time.Time     `db:"waiting_since"`
	Waited       time.Duration `db:"waited"`
	// UpgradeFrom is an upgrade's: the token of the shared lease (or
	// permit) of the key that its owner holds and gives up when the key is
	// granted to it (locker's Upgrade); nil for any other waiter.
	UpgradeFrom *int64 `db:"upgrade_from"`
}

const waitersSQL = `
SELECT w.waiter_id, w.lock_key, w.owner_id, w.waiting_since, distributed_lock_now() - w.waiting_since AS waited,
       w.upgrade_from
FROM distributed_lock_waiter w
WHERE w.lock_key = $1 AND w.seen_until > distributed_lock_now()
ORDER BY w.waiter_id`

// Waiters lists the live waiters of key in queue order (the order a release
// hands the key down, see locker.Acquire): arrival order.
func Waiters(ctx context.Context, db store.DBTX, key string) ([]Waiter, error) {
	return collect[Waiter](db.Query(ctx, waitersSQL, key))
}
