package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sort is an order the console can list locks in. Each is read as a window
// around the selection, never by sorting the table. By key the window comes
// through the primary key, so a poll costs the same at row 10 and at row
// 90,000. The other orders have no index of their own (see schema.sql: an
// index on a lease column would make every grant a non-HOT update), so each
// side of their window is one pass over the table into a top-N sort that
// holds only the window's rows; with an operator's index on the column (see
// README) the planner reads it through that instead, from the same SQL.
type Sort string

const (
	SortKey     Sort = "key"     // lock_key ascending (primary key)
	SortTTL     Sort = "ttl"     // soonest expiry first: expired rows, then expiring ones
	SortToken   Sort = "token"   // newest grant (largest fencing token) first
	SortHeldFor Sort = "held"    // longest held first (acquired_at ascending)
	SortWaiters Sort = "waiters" // most waiters first, then longest wait, then key
)

// Sorts lists the orders in the console's cycle order.
var Sorts = []Sort{SortKey, SortTTL, SortToken, SortHeldFor, SortWaiters}

// ListQuery asks for a window of the lock table around one row.
type ListQuery struct {
	// Filter keeps rows whose key or owner contains it, case-insensitively.
	// % and _ match themselves.
	Filter string
	Sort   Sort
	// Anchor is the key the window is centred on (the console's selection).
	// When it is empty, gone or filtered out, the row at Rank is used.
	Anchor string
	// Rank is the fallback position (0-based, in Sort order among matching
	// rows); -1 means the last row. Positions past the end give the last row.
	Rank int
	// Before and After bound the window: up to Before rows before the
	// anchor and up to After rows from the anchor on (the anchor included).
	Before, After int
}

// ListedLock is a lock row with its live waiters.
type ListedLock struct {
	Lock
	// Waiters counts live waiter records (seen_until in the future).
	Waiters int64 `db:"waiters"`
	// OldestWait is how long the longest waiter has waited (database clock).
	OldestWait time.Duration `db:"oldest_wait"`
	// OldestSince is when the longest waiter started waiting; nil without waiters.
	OldestSince *time.Time `db:"oldest_since"`
}

// Totals counts the whole table by state, whatever the filter.
type Totals struct {
	All      int64 `db:"total"`
	Held     int64 `db:"held"` // unexpired, unreleased (Expiring included)
	Expiring int64 `db:"expiring"`
	Expired  int64 `db:"expired"`
	Free     int64 `db:"free"`
	// Waiting counts live waiters, on WaitedKeys distinct keys.
	Waiting    int64 `db:"waiting"`
	WaitedKeys int64 `db:"waited_keys"`
}

// Page is one poll's answer: a window of rows and the numbers around it.
type Page struct {
	Rows []ListedLock
	// Anchor is the index in Rows of the anchor row (-1 when Rows is empty).
	Anchor int
	// AnchorRank is the anchor row's position among matching rows.
	AnchorRank int64
	// Matching counts rows that pass the filter.
	Matching int64
	Totals   Totals
	// InRecovery is pg_is_in_recovery(): the server is a standby and
	// refuses writes.
	InRecovery    bool
	ServerVersion string
	DBNow         time.Time
}

// LikePattern turns a filter into an ILIKE pattern matching it anywhere,
// with \, % and _ escaped so they match themselves. "" stays "".
func LikePattern(filter string) string {
	if filter == "" {
		return ""
	}
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(filter) + "%"
}

// matchCond is the filter; $2 is LikePattern's result ("" matches all).
const matchCond = `($2 = '' OR l.lock_key ILIKE $2 OR l.owner_id ILIKE $2)`

// liveWaitersCTE aggregates live waiters per key. The waiter table is small
// (one row per blocked Acquire), so reading all of it is cheap.
const liveWaitersCTE = `w AS (
    SELECT w.lock_key, count(*) AS n, min(w.waiting_since) AS since
    FROM distributed_lock_waiter w
    WHERE w.seen_until > clock_timestamp()
    GROUP BY w.lock_key)`

// anchorColumns are a row's values in every sort order. since is NULL for a
// key without live waiters (it sorts after all waited keys).
const anchorColumns = `l.lock_key, l.expires_at, l.fence_token, l.acquired_at,
    coalesce(w.n, 0) AS n, w.since`

// anchorSQL reads the anchor's sort values, if it exists and matches.
// $1 key, $2 pattern.
const anchorSQL = `
WITH ` + liveWaitersCTE + `
SELECT ` + anchorColumns + `
FROM distributed_lock l LEFT JOIN w ON w.lock_key = l.lock_key
WHERE l.lock_key = $1 AND ` + matchCond

type anchorRow struct {
	Key        string     `db:"lock_key"`
	ExpiresAt  time.Time  `db:"expires_at"`
	Token      int64      `db:"fence_token"`
	AcquiredAt time.Time  `db:"acquired_at"`
	N          int64      `db:"n"`
	Since      *time.Time `db:"since"`
}

// windowColumns selects a ListedLock plus the row's place in the window:
// side 0 is before the anchor, 1 from it on; pos counts away from the anchor.
const windowColumns = lockColumns + `,
	coalesce(wt.n, 0) AS waiters, coalesce(c.ts - wt.since, interval '0') AS oldest_wait,
	wt.since AS oldest_since, x.side, x.pos`

// windowTail joins the window's rows (CTE x, holding lock_key, side, pos) to
// their full row and live waiters: a lookup per window row, never a scan.
const windowTail = `
SELECT ` + windowColumns + `
FROM x JOIN distributed_lock l ON l.lock_key = x.lock_key
CROSS JOIN (SELECT clock_timestamp() AS ts) c
LEFT JOIN LATERAL (
    SELECT count(*) AS n, min(w2.waiting_since) AS since FROM distributed_lock_waiter w2
    WHERE w2.lock_key = l.lock_key AND w2.seen_until > c.ts) wt ON true`

// Windows for the four column orders. Each side is a range from the anchor's
// values in the sort order, stopped by LIMIT: an index range scan by key (or
// through an operator's index), otherwise a pass over the table into a
// bounded top-N sort. $1 anchor key, $2 pattern, $3 rows before, $4 rows
// from the anchor on, $5 the anchor's value in the sort column.
const windowByKeySQL = `
WITH x AS (
    SELECT s.lock_key, 1 AS side, row_number() OVER (ORDER BY s.lock_key) AS pos FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE l.lock_key >= $1 AND ` + matchCond + `
        ORDER BY l.lock_key LIMIT $4) s
    UNION ALL
    SELECT s.lock_key, 0, row_number() OVER (ORDER BY s.lock_key DESC) FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE l.lock_key < $1 AND ` + matchCond + `
        ORDER BY l.lock_key DESC LIMIT $3) s)` + windowTail

const windowByTTLSQL = `
WITH x AS (
    SELECT s.lock_key, 1 AS side, row_number() OVER (ORDER BY s.expires_at, s.lock_key) AS pos FROM (
        SELECT l.lock_key, l.expires_at FROM distributed_lock l
        WHERE (l.expires_at, l.lock_key) >= ($5::timestamptz, $1::text) AND ` + matchCond + `
        ORDER BY l.expires_at, l.lock_key LIMIT $4) s
    UNION ALL
    SELECT s.lock_key, 0, row_number() OVER (ORDER BY s.expires_at DESC, s.lock_key DESC) FROM (
        SELECT l.lock_key, l.expires_at FROM distributed_lock l
        WHERE (l.expires_at, l.lock_key) < ($5::timestamptz, $1::text) AND ` + matchCond + `
        ORDER BY l.expires_at DESC, l.lock_key DESC LIMIT $3) s)` + windowTail

// Tokens come from one sequence and each value lands on at most one row, so
// fence_token alone is a total order and the key ($1) is not needed; the
// "$1 IS NOT NULL" only gives the parameter a type.
const windowByTokenSQL = `
WITH x AS (
    SELECT s.lock_key, 1 AS side, row_number() OVER (ORDER BY s.fence_token DESC) AS pos FROM (
        SELECT l.lock_key, l.fence_token FROM distributed_lock l
        WHERE l.fence_token <= $5::bigint AND $1::text IS NOT NULL AND ` + matchCond + `
        ORDER BY l.fence_token DESC LIMIT $4) s
    UNION ALL
    SELECT s.lock_key, 0, row_number() OVER (ORDER BY s.fence_token) FROM (
        SELECT l.lock_key, l.fence_token FROM distributed_lock l
        WHERE l.fence_token > $5::bigint AND ` + matchCond + `
        ORDER BY l.fence_token LIMIT $3) s)` + windowTail

const windowByHeldSQL = `
WITH x AS (
    SELECT s.lock_key, 1 AS side, row_number() OVER (ORDER BY s.acquired_at, s.lock_key) AS pos FROM (
        SELECT l.lock_key, l.acquired_at FROM distributed_lock l
        WHERE (l.acquired_at, l.lock_key) >= ($5::timestamptz, $1::text) AND ` + matchCond + `
        ORDER BY l.acquired_at, l.lock_key LIMIT $4) s
    UNION ALL
    SELECT s.lock_key, 0, row_number() OVER (ORDER BY s.acquired_at DESC, s.lock_key DESC) FROM (
        SELECT l.lock_key, l.acquired_at FROM distributed_lock l
        WHERE (l.acquired_at, l.lock_key) < ($5::timestamptz, $1::text) AND ` + matchCond + `
        ORDER BY l.acquired_at DESC, l.lock_key DESC LIMIT $3) s)` + windowTail

// windowByWaitersSQL: the order is "keys with live waiters (most first,
// longest wait, key)" then "keys without, by key". The first segment comes
// from the small waiter table and may be sorted freely; the second is a
// primary-key range scan that skips waited keys. $1..$4 as above, $5 the
// anchor's waiter count, $6 its oldest wait (NULL without waiters).
const windowByWaitersSQL = `
WITH ` + liveWaitersCTE + `,
seg_a AS (
    SELECT l.lock_key, -w.n AS negn, w.since FROM w JOIN distributed_lock l ON l.lock_key = w.lock_key
    WHERE ` + matchCond + `),
after_a AS (
    SELECT s.lock_key, 0 AS seg, row_number() OVER (ORDER BY s.negn, s.since, s.lock_key) AS rn FROM (
        SELECT g.* FROM seg_a g
        WHERE $5::bigint > 0 AND (g.negn, g.since, g.lock_key) >= (-$5::bigint, $6::timestamptz, $1::text)
        ORDER BY g.negn, g.since, g.lock_key LIMIT $4) s),
after_b AS (
    SELECT s.lock_key, 1 AS seg, row_number() OVER (ORDER BY s.lock_key) AS rn FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE l.lock_key >= CASE WHEN $5::bigint > 0 THEN '' ELSE $1::text END AND ` + matchCond + `
          AND NOT EXISTS (SELECT 1 FROM w WHERE w.lock_key = l.lock_key)
        ORDER BY l.lock_key LIMIT $4) s),
before_b AS (
    SELECT s.lock_key, 0 AS seg, row_number() OVER (ORDER BY s.lock_key DESC) AS rn FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE $5::bigint = 0 AND l.lock_key < $1::text AND ` + matchCond + `
          AND NOT EXISTS (SELECT 1 FROM w WHERE w.lock_key = l.lock_key)
        ORDER BY l.lock_key DESC LIMIT $3) s),
before_a AS (
    SELECT s.lock_key, 1 AS seg, row_number() OVER (ORDER BY s.negn DESC, s.since DESC, s.lock_key DESC) AS rn FROM (
        SELECT g.* FROM seg_a g
        WHERE $5::bigint = 0 OR (g.negn, g.since, g.lock_key) < (-$5::bigint, $6::timestamptz, $1::text)
        ORDER BY g.negn DESC, g.since DESC, g.lock_key DESC LIMIT $3) s),
x AS (
    SELECT s.lock_key, 1 AS side, row_number() OVER (ORDER BY s.seg, s.rn) AS pos FROM (
        SELECT * FROM (SELECT * FROM after_a UNION ALL SELECT * FROM after_b) u ORDER BY u.seg, u.rn LIMIT $4) s
    UNION ALL
    SELECT s.lock_key, 0, row_number() OVER (ORDER BY s.seg, s.rn) FROM (
        SELECT * FROM (SELECT * FROM before_b UNION ALL SELECT * FROM before_a) u ORDER BY u.seg, u.rn LIMIT $3) s)` + windowTail

var windowSQL = map[Sort]string{
	SortKey:     windowByKeySQL,
	SortTTL:     windowByTTLSQL,
	SortToken:   windowByTokenSQL,
	SortHeldFor: windowByHeldSQL,
	SortWaiters: windowByWaitersSQL,
}

// windowArgs are a window statement's arguments for anchor a.
func windowArgs(s Sort, a anchorRow, pattern string, before, after int) []any {
	args := []any{a.Key, pattern, before, after}
	switch s {
	case SortTTL:
		args = append(args, a.ExpiresAt)
	case SortToken:
		args = append(args, a.Token)
	case SortHeldFor:
		args = append(args, a.AcquiredAt)
	case SortWaiters:
		args = append(args, a.N, a.Since)
	}
	return args
}

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

// MaxWindow bounds Before and After.
const MaxWindow = 1000

// ListLocks reads the window of rows q asks for, the table's totals and the
// server's role. It makes one pass over the table for the counts and reads
// the window as Sort describes; it never sorts the table.
func ListLocks(ctx context.Context, db DBTX, q ListQuery) (Page, error) {
	if _, ok := windowSQL[q.Sort]; !ok {
		return Page{}, fmt.Errorf("store: unknown sort %q", q.Sort)
	}
	if q.Before < 0 || q.After < 1 || q.Before > MaxWindow || q.After > MaxWindow {
		return Page{}, fmt.Errorf("store: window %d before, %d after: out of range", q.Before, q.After)
	}
	pattern := LikePattern(q.Filter)
	var anchor *anchorRow
	if q.Anchor != "" {
		a, found, err := maybeOne[anchorRow](db.Query(ctx, anchorSQL, q.Anchor, pattern))
		if err != nil {
			return Page{}, err
		}
		if found {
			anchor = &a
		}
	}
	args := []any{nil, pattern, string(q.Sort), nil, nil, nil, int64(0), nil}
	if anchor != nil {
		args = []any{anchor.Key, pattern, string(q.Sort), anchor.ExpiresAt, anchor.Token,
			anchor.AcquiredAt, anchor.N, anchor.Since}
	}
	t, _, err := maybeOne[totalsRow](db.Query(ctx, totalsSQL, args...))
	if err != nil {
		return Page{}, err
	}
	page := Page{Anchor: -1, Matching: t.Matching, InRecovery: t.InRecovery,
		ServerVersion: t.ServerVersion, DBNow: t.DBNow,
		Totals: Totals{All: t.Total, Held: t.Held, Expiring: t.Expiring, Expired: t.Expired,
			Free: t.Free, Waiting: t.Waiting, WaitedKeys: t.WaitedKeys}}
	if t.Matching == 0 {
		return page, nil
	}
	var rank int64
	switch {
	case anchor == nil:
		rank = int64(q.Rank)
		if rank < 0 || rank >= t.Matching {
			rank = t.Matching - 1
		}
		a, found, err := nthAnchor(ctx, db, q.Sort, pattern, rank, t.Matching, t.MatchingWaited)
		if err != nil {
			return Page{}, err
		}
		if !found { // the table shrank between the two statements
			return page, nil
		}
		anchor = &a
	case q.Sort != SortWaiters:
		rank = t.ScanRank
	case anchor.N > 0:
		rank = t.WaitedRank
	default:
		rank = t.MatchingWaited + t.ScanRank - t.WaitedKeyRank
	}
	rows, err := collect[windowRow](db.Query(ctx, windowSQL[q.Sort],
		windowArgs(q.Sort, *anchor, pattern, q.Before, q.After)...))
	if err != nil {
		return Page{}, err
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Side != rows[j].Side {
			return rows[i].Side < rows[j].Side
		}
		if rows[i].Side == 0 { // before the anchor: farthest first
			return rows[i].Pos > rows[j].Pos
		}
		return rows[i].Pos < rows[j].Pos
	})
	page.Rows = make([]ListedLock, len(rows))
	for i, r := range rows {
		page.Rows[i] = r.ListedLock
		if r.Side == 1 && r.Pos == 1 {
			page.Anchor = i
		}
	}
	if page.Anchor < 0 && len(page.Rows) > 0 { // anchor vanished between statements
		page.Anchor = len(page.Rows) - 1
	}
	page.AnchorRank = rank
	return page, nil
}

type windowRow struct {
	ListedLock
	Side int32 `db:"side"`
	Pos  int64 `db:"pos"`
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

// maybeOne collects at most one row; found is false when there is none.
func maybeOne[T any](rows pgx.Rows, err error) (v T, found bool, _ error) {
	if err != nil {
		return v, false, Interpret(err)
	}
	v, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	if errors.Is(err, pgx.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, Interpret(err)
	}
	return v, true, nil
}
