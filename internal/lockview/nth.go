package lockview

import (
	"context"

	"github.com/lockctl/lockctl/store"
)

// Anchors at a position, for when there is none (first poll, the selected
// key was pruned or filtered out, Home/End). OFFSET walks the order, so this
// costs O(position): nthAnchor counts from whichever end is nearer (End is
// the first row of the reversed order), and it runs only on those
// occasions. $1 offset, $2 pattern.
const nthHead = `
WITH ` + liveWaitersCTE + `
SELECT ` + anchorColumns + `
FROM distributed_lock l LEFT JOIN w ON w.lock_key = l.lock_key
WHERE ` + keyMatch

// nthWaitedSQL: position within the keys that have live waiters.
const nthWaitedSQL = `
WITH ` + liveWaitersCTE + `
SELECT ` + anchorColumns + `
FROM w JOIN distributed_lock l ON l.lock_key = w.lock_key
WHERE ` + keyMatch + `
ORDER BY w.n DESC, w.since, l.lock_key OFFSET $1 LIMIT 1`

// nthUnwaitedSQL: position within the keys without live waiters.
const nthUnwaitedSQL = `
WITH ` + liveWaitersCTE + `
SELECT l.lock_key, l.expires_at, l.released_at, l.fence_token, l.acquired_at, 0::bigint AS n, NULL::timestamptz AS since
FROM distributed_lock l
WHERE ` + keyMatch + ` AND NOT EXISTS (SELECT 1 FROM w WHERE w.lock_key = l.lock_key)
ORDER BY l.lock_key OFFSET $1 LIMIT 1`

// nthSQL and nthLastSQL read the row at a position by key and in each
// column order; nthLastSQL counts from the last row (the order reversed).
// A column order's ORDER BY is the one its window reads (columnOrder.list),
// so an anchor found here sits where the window expects it.
var nthSQL, nthLastSQL = nthStatements()

func nthStatements() (first, last map[Sort]string) {
	nth := func(order string) string { return nthHead + ` ORDER BY ` + order + ` OFFSET $1 LIMIT 1` }
	first = map[Sort]string{SortKey: nth(`l.lock_key`)}
	last = map[Sort]string{SortKey: nth(`l.lock_key DESC`)}
	for s, o := range columnOrders {
		first[s], last[s] = nth(o.list(o.expr, true)), nth(o.list(o.expr, false))
	}
	return first, last
}

// nthAnchor reads the row at rank among matching rows (waited of them have
// live waiters).
func nthAnchor(ctx context.Context, db store.DBTX, s Sort, pattern string, rank, matching, waited int64) (anchorRow, bool, error) {
	query, offset := nthSQL[s], rank
	switch fromEnd := matching - 1 - rank; {
	case s == SortWaiters && rank < waited:
		query = nthWaitedSQL
	case s == SortWaiters:
		query, offset = nthUnwaitedSQL, rank-waited
	case fromEnd < rank:
		query, offset = nthLastSQL[s], fromEnd
	}
	return maybeOne[anchorRow](db.Query(ctx, query, offset, pattern))
}
