package lockview

import (
	"context"

	"github.com/lockctl/lockctl/store"
)

// What an operator's force on a shared or semaphore key ended, read inside
// the force's own transaction, before it commits: after it, holders may
// join and slots be granted again, and counting before it would miss
// holders that joined in between.

// ForcedHolders is what one force ended, as read in its transaction.
type ForcedHolders struct {
	// Ended counts the holders' leases a force on the group's token ended:
	// the events of its kind it recorded (one per lease,
	// distributed_lock_force_holders in 11_shared.sql).
	Ended int `db:"ended"`
	// Holder says whether the token forced was a holder's lease (a slot's),
	// and Running how many holders' leases still run after it.
	Holder  bool `db:"holder"`
	Running int  `db:"running"`
}

// forcedHoldersSQL reads ForcedHolders of key ($1), token ($2) and event
// kind ($3). A row's xmin is the transaction that wrote it, so the events
// counted are this transaction's. The slot a force ended stays locked
// until it commits, so it still has the token.
const forcedHoldersSQL = `
SELECT (SELECT count(*) FROM distributed_lock_event e
        WHERE e.lock_key = $1 AND e.kind = $3 AND e.xmin = pg_current_xact_id()::xid) AS ended,
       coalesce(bool_or(h.fence_token = $2), false) AS holder,
       count(*) FILTER (WHERE distributed_lock_live(h, c.ts)) AS running
FROM distributed_lock h, (SELECT distributed_lock_now() AS ts) c WHERE h.lock_key = $1 AND h.slot > 0`

// ReadForcedHolders reads, in tx, the transaction that has just forced
// token of key (ForceExpire or ForceRelease, whose event kind is kind),
// what it ended.
func ReadForcedHolders(ctx context.Context, tx store.DBTX, key string, token int64, kind string) (ForcedHolders, error) {
	f, _, err := maybeOne[ForcedHolders](tx.Query(ctx, forcedHoldersSQL, key, token, kind))
	return f, err
}
