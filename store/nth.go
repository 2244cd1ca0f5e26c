package store

import "context"

// Anchors at a position, for when there is none (first poll, the selected
// key was pruned or filtered out, Home/End). OFFSET walks the order, so this
// costs O(position): nthAnchor counts from whichever end is nearer (End is
// the first row of the reversed order), and it runs only on those
// occasions. $1 offset, $2 pattern.
const nthHead = `
WITH ` + liveWaitersCTE + `
SELECT ` + anchorColumns + `
FROM distributed_lock l LEFT JOIN w ON w.lock_key = l.lock_key
WHERE ` + matchCond

const nthByKeySQL = nthHead + ` ORDER BY l.lock_key OFFSET $1 LIMIT 1`
const nthByTTLSQL = nthHead + ` ORDER BY l.expires_at, l.lock_key OFFSET $1 LIMIT 1`
const nthByTokenSQL = nthHead + ` ORDER BY l.fence_token DESC OFFSET $1 LIMIT 1`
const nthByHeldSQL = nthHead + ` ORDER BY l.acquired_at, l.lock_key OFFSET $1 LIMIT 1`

// The same orders reversed: $1 counts from the last row.
const nthLastByKeySQL = nthHead + ` ORDER BY l.lock_key DESC OFFSET $1 LIMIT 1`
const nthLastByTTLSQL = nthHead + ` ORDER BY l.expires_at DESC, l.lock_key DESC OFFSET $1 LIMIT 1`
const nthLastByTokenSQL = nthHead + ` ORDER BY l.fence_token OFFSET $1 LIMIT 1`
const nthLastByHeldSQL = nthHead + ` ORDER BY l.acquired_at DESC, l.lock_key DESC OFFSET $1 LIMIT 1`

// nthWaitedSQL: position within the keys that have live waiters.
const nthWaitedSQL = `
WITH ` + liveWaitersCTE + `
SELECT ` + anchorColumns + `
FROM w JOIN distributed_lock l ON l.lock_key = w.lock_key
WHERE ` + matchCond + `
ORDER BY w.n DESC, w.since, l.lock_key OFFSET $1 LIMIT 1`

// nthUnwaitedSQL: position within the keys without live waiters.
const nthUnwaitedSQL = `
WITH ` + liveWaitersCTE + `
SELECT l.lock_key, l.expires_at, l.fence_token, l.acquired_at, 0::bigint AS n, NULL::timestamptz AS since
FROM distributed_lock l
WHERE ` + matchCond + ` AND NOT EXISTS (SELECT 1 FROM w WHERE w.lock_key = l.lock_key)
ORDER BY l.lock_key OFFSET $1 LIMIT 1`

var nthSQL = map[Sort]string{
	SortKey:     nthByKeySQL,
	SortTTL:     nthByTTLSQL,
	SortToken:   nthByTokenSQL,
	SortHeldFor: nthByHeldSQL,
}

var nthLastSQL = map[Sort]string{
	SortKey:     nthLastByKeySQL,
	SortTTL:     nthLastByTTLSQL,
	SortToken:   nthLastByTokenSQL,
	SortHeldFor: nthLastByHeldSQL,
}

// nthAnchor reads the row at rank among matching rows (waited of them have
// live waiters).
func nthAnchor(ctx context.Context, db DBTX, s Sort, pattern string, rank, matching, waited int64) (anchorRow, bool, error) {
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
