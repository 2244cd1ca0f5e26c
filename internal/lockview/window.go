package lockview

import "github.com/jackc/pgx/v5/pgtype"

// windowColumns selects a ListedLock plus the row's place in the window:
// side 0 is before the anchor, 1 from it on; pos counts away from the anchor.
const windowColumns = lockColumns + `,
	coalesce(wt.n, 0) AS waiters, coalesce(l.db_now - wt.since, interval '0') AS oldest_wait,
	wt.since AS oldest_since, x.side, x.pos`

// windowTail joins the window's rows (CTE x, holding lock_key, side, pos) to
// their keys in the readers' view and their live waiters: a lookup per
// window row, never a scan.
const windowTail = `
SELECT ` + windowColumns + `
FROM x JOIN distributed_lock_state l ON l.lock_key = x.lock_key
LEFT JOIN LATERAL (
    SELECT count(*) AS n, min(w2.waiting_since) AS since FROM distributed_lock_waiter w2
    WHERE w2.lock_key = l.lock_key AND w2.seen_until > l.db_now) wt ON true`

// The window statements share their parameters: $1 anchor key, $2 pattern,
// $3 rows before, $4 rows from the anchor on, then the anchor's sort values
// (windowArgs). Each side is a range from the anchor in the sort order,
// stopped by LIMIT: an index range scan by key (or through an operator's
// index), otherwise a pass over the table into a top-N sort that holds only
// the window's rows.
const windowByKeySQL = `
WITH x AS (
    SELECT s.lock_key, 1 AS side, row_number() OVER (ORDER BY s.lock_key) AS pos FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE l.lock_key >= $1 AND ` + keyMatch + `
        ORDER BY l.lock_key LIMIT $4) s
    UNION ALL
    SELECT s.lock_key, 0, row_number() OVER (ORDER BY s.lock_key DESC) FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE l.lock_key < $1 AND ` + keyMatch + `
        ORDER BY l.lock_key DESC LIMIT $3) s)` + windowTail

// columnOrder is one of the orders by a lease column, with the key as tie
// break: the row's position is (value, lock_key). Their window statements
// differ only in the value, its type and the direction, so they are made
// from this description (constants only; no value reaches the SQL text).
type columnOrder struct {
	// expr is the row's value in the order, over the lock row l: a column,
	// or an expression an operator's index can be built on.
	expr, typ string // "l.fence_token", "bigint"
	// value is a row's value in the order, as the statements' parameters.
	value      func(anchorRow) any
	descending bool // the list starts at the largest position (tokens: newest first)
	// unique: no two rows share a value (tokens come from one sequence), so
	// the key never breaks a tie and ORDER BY leaves it out: an index on the
	// column alone then serves the order without an extra sort step.
	unique bool
}

// ttlPosition orders by expiry with the free rows last: a released row
// keeps its last lease's expiry, which would put it among the expired and
// expiring rows an operator sorts by TTL to find. Free rows then follow in
// key order. The index in docs/operations.md#large-tables is built on this
// expression.
const ttlPosition = `(CASE WHEN l.released_at IS NULL THEN l.expires_at ELSE 'infinity'::timestamptz END)`

// freePosition is ttlPosition's value for a free row.
var freePosition = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}

var columnOrders = map[Sort]columnOrder{
	SortTTL: {expr: ttlPosition, typ: "timestamptz",
		value: func(a anchorRow) any {
			if a.ReleasedAt != nil {
				return freePosition
			}
			return a.ExpiresAt
		}},
	SortToken: {expr: "l.fence_token", typ: "bigint", descending: true, unique: true,
		value: func(a anchorRow) any { return a.Token }},
	SortHeldFor: {expr: "l.acquired_at", typ: "timestamptz",
		value: func(a anchorRow) any { return a.AcquiredAt }},
}

// row is the row's position in the order, val its value (o.expr over the
// table, l.v over a derived table).
func (o columnOrder) row(val string) string { return `(` + val + `, l.lock_key)` }

// at is a position given by parameters: the anchor is at("$5", "$1").
func (o columnOrder) at(value, key string) string {
	return `(` + value + `::` + o.typ + `, ` + key + `::text)`
}

// list is the ORDER BY clause in list order (forward) or reversed.
func (o columnOrder) list(val string, forward bool) string {
	switch asc := forward != o.descending; {
	case o.unique && asc:
		return val
	case o.unique:
		return val + ` DESC`
	case asc:
		return val + `, l.lock_key`
	default:
		return val + ` DESC, l.lock_key DESC`
	}
}

// sides selects the window's rows from source, whose rows' value is val:
// the first $4 from the anchor on (side 1) and the last $3 before it (side
// 0), each numbered away from the anchor. cond is added to both sides'
// WHERE.
func (o columnOrder) sides(source, val, cond string) string {
	row, anchor := o.row(val), o.at("$5", "$1")
	from, before := row+` >= `+anchor, row+` < `+anchor
	if o.descending {
		from, before = row+` <= `+anchor, row+` > `+anchor
	}
	side := func(n, where string, forward bool, limit string) string {
		return `
    SELECT l.lock_key, ` + n + ` AS side, row_number() OVER (ORDER BY ` + o.list("l.v", forward) + `) AS pos FROM (
        SELECT l.lock_key, ` + val + ` AS v FROM ` + source + `
        WHERE ` + where + cond + `
        ORDER BY ` + o.list(val, forward) + ` LIMIT ` + limit + `) l`
	}
	return side("1", from, true, "$4") + `
    UNION ALL` + side("0", before, false, "$3")
}

// windowSQL reads each side with a pass over the table (or through an
// operator's index on the order's value, from the same text).
func (o columnOrder) windowSQL() string {
	return `
WITH x AS (` + o.sides(`distributed_lock l`, o.expr, ` AND `+keyMatch) + `)` + windowTail
}

// nearSQL reads the table once for the first 2 × ($3 + $4) rows in the
// order from a span's first row ($6/$7) on, up to its last row's value
// ($8): the window's worth and as much again for rows that entered it
// since. It takes both sides from those when they hold the anchor: then
// every row between the span's first and the anchor is among them, and the
// rows after the anchor are a prefix of its side (a side that comes up
// short is read again; see readWindow). When they do not hold it, no rows
// at all, since rows between the anchor and the span would be missed. The
// upper end is the value alone, not the row's position, and the LIMIT ends
// the read: PostgreSQL 15 ends a row-comparison range through an index on
// its first column only, so a range ending at the span's last position
// would read on through every row sharing that value (by TTL, every free
// row after the span: they all share 'infinity'). Without the operator's
// index it is the same one pass, into a top-N sort of the rows in the span.
func (o columnOrder) nearSQL() string {
	from, upTo := o.row(o.expr)+` >= `+o.at("$6", "$7"), o.expr+` <= $8::`+o.typ
	if o.descending {
		from, upTo = o.row(o.expr)+` <= `+o.at("$6", "$7"), o.expr+` >= $8::`+o.typ
	}
	return `
WITH near AS MATERIALIZED (
    SELECT l.lock_key, ` + o.expr + ` AS v FROM distributed_lock l
    WHERE ` + from + ` AND ` + upTo + ` AND ` + keyMatch + `
    ORDER BY ` + o.list(o.expr, true) + ` LIMIT 2 * ($3::int + $4::int)),
x AS (` + o.sides(`near l`, `l.v`, ` AND EXISTS (SELECT 1 FROM near a WHERE a.lock_key = $1)`) + `)` + windowTail
}

// windowByWaitersSQL: the order is "keys with live waiters (most first,
// longest wait, key)" then "keys without, by key". The first segment comes
// from the small waiter table and may be sorted freely; the second is a
// primary-key range scan that skips waited keys. $1..$4 as above, $5 the
// anchor's waiter count, $6 its oldest wait (NULL without waiters).
const windowByWaitersSQL = `
WITH ` + liveWaitersCTE + `,
seg_a AS (
    SELECT l.lock_key, -w.n AS negn, w.since FROM w JOIN distributed_lock l ON l.lock_key = w.lock_key
    WHERE ` + keyMatch + `),
after_a AS (
    SELECT s.lock_key, 0 AS seg, row_number() OVER (ORDER BY s.negn, s.since, s.lock_key) AS rn FROM (
        SELECT g.* FROM seg_a g
        WHERE $5::bigint > 0 AND (g.negn, g.since, g.lock_key) >= (-$5::bigint, $6::timestamptz, $1::text)
        ORDER BY g.negn, g.since, g.lock_key LIMIT $4) s),
after_b AS (
    SELECT s.lock_key, 1 AS seg, row_number() OVER (ORDER BY s.lock_key) AS rn FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE l.lock_key >= CASE WHEN $5::bigint > 0 THEN '' ELSE $1::text END AND ` + keyMatch + `
          AND NOT EXISTS (SELECT 1 FROM w WHERE w.lock_key = l.lock_key)
        ORDER BY l.lock_key LIMIT $4) s),
before_b AS (
    SELECT s.lock_key, 0 AS seg, row_number() OVER (ORDER BY s.lock_key DESC) AS rn FROM (
        SELECT l.lock_key FROM distributed_lock l
        WHERE $5::bigint = 0 AND l.lock_key < $1::text AND ` + keyMatch + `
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

// windowSQL and nearSQL are each order's window statements.
var windowSQL, nearSQL = windowStatements()

func windowStatements() (window, near map[Sort]string) {
	window = map[Sort]string{SortKey: windowByKeySQL, SortWaiters: windowByWaitersSQL}
	near = map[Sort]string{}
	for s, o := range columnOrders {
		window[s], near[s] = o.windowSQL(), o.nearSQL()
	}
	return window, near
}

// windowArgs are a window statement's arguments for anchor a.
func windowArgs(s Sort, a anchorRow, pattern string, before, after int) []any {
	args := []any{a.Key, pattern, before, after}
	switch {
	case s.byColumn():
		args = append(args, sortValue(s, a))
	case s == SortWaiters:
		args = append(args, a.N, a.Since)
	}
	return args
}

// Span is where a page's rows lie in its order. Handed back as
// ListQuery.Near on the next poll (Page.Span), it lets the TTL, token and
// held-for orders read their window in one pass over the table instead of
// one per side: the rows from the span's first row up to its last row's
// value are read first (twice the window's worth at most), and a side that
// comes up shorter than the totals say it must be is read again the full
// way. So the result is the same with or without a Span; only the cost
// differs. A Span from another order or filter is ignored.
type Span struct {
	sort        Sort
	pattern     string
	first, last anchorRow
}

// spanOf is the span of rows listed in order s under pattern.
func spanOf(s Sort, pattern string, rows []ListedLock) Span {
	if !s.byColumn() || len(rows) == 0 {
		return Span{}
	}
	end := func(l Lock) anchorRow {
		return anchorRow{Key: l.Key, ExpiresAt: l.ExpiresAt, ReleasedAt: l.ReleasedAt, Token: l.Token, AcquiredAt: l.AcquiredAt}
	}
	return Span{sort: s, pattern: pattern, first: end(rows[0].Lock), last: end(rows[len(rows)-1].Lock)}
}

// covers says whether the span was taken in order s under pattern.
func (sp Span) covers(s Sort, pattern string) bool {
	return sp.sort == s && sp.pattern == pattern && s.byColumn()
}

// nearArgs are nearSQL's arguments: windowArgs, the span's first row and
// its last row's value.
func nearArgs(s Sort, a anchorRow, pattern string, before, after int, sp Span) []any {
	return append(windowArgs(s, a, pattern, before, after), sortValue(s, sp.first), sp.first.Key, sortValue(s, sp.last))
}

// windowRow is a window statement's row.
type windowRow struct {
	ListedLock
	Side int32 `db:"side"`
	Pos  int64 `db:"pos"`
}

// onSide counts the rows on one side of the anchor.
func onSide(rows []windowRow, side int32) int {
	n := 0
	for _, r := range rows {
		if r.Side == side {
			n++
		}
	}
	return n
}

// dropSide keeps the rows not on side.
func dropSide(rows []windowRow, side int32) []windowRow {
	kept := rows[:0]
	for _, r := range rows {
		if r.Side != side {
			kept = append(kept, r)
		}
	}
	return kept
}
