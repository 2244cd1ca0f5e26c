package lockview

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/store"
)

// A poll's numbers come from two statements. The poll statement reads what
// is cheap every time: the waiter table (small: one row per blocked
// Acquire), the server's role and clock. The count statement passes over
// the lock table, so it costs what the table's size does; it runs on a
// poll only when the last page's Counts are due (Counts.due) and is reused
// in between.

// pollSQL reads the server's role and clock and, from the waiter table,
// the live waiters and the anchor's place among the waited keys. $1 anchor
// key (NULL: none), $2 pattern, $3 the anchor's waiter count, $4 its oldest
// wait (pollArgs).
const pollSQL = `
WITH ` + liveWaitersCTE + `,
seg_a AS (
    SELECT l.lock_key, w.n, w.since FROM w JOIN distributed_lock l ON l.lock_key = w.lock_key
    WHERE ` + keyMatch + `)
SELECT
    (SELECT count(*) FROM seg_a) AS matching_waited,
    (SELECT count(*) FROM seg_a g WHERE g.lock_key < $1::text) AS waited_key_rank,
    (SELECT count(*) FROM seg_a g
     WHERE (-g.n, g.since, g.lock_key) < (-$3::bigint, coalesce($4::timestamptz, 'infinity'), $1::text)) AS waited_rank,
    (SELECT coalesce(sum(n), 0) FROM w)::bigint AS waiting,
    (SELECT count(*) FROM w) AS waited_keys,
    pg_is_in_recovery() AS in_recovery,
    current_setting('server_version') AS server_version,
    distributed_lock_now() AS db_now`

type pollRow struct {
	MatchingWaited int64     `db:"matching_waited"`
	WaitedKeyRank  int64     `db:"waited_key_rank"`
	WaitedRank     int64     `db:"waited_rank"`
	Waiting        int64     `db:"waiting"`
	WaitedKeys     int64     `db:"waited_keys"`
	InRecovery     bool      `db:"in_recovery"`
	ServerVersion  string    `db:"server_version"`
	DBNow          time.Time `db:"db_now"`
}

// pollArgs are pollSQL's arguments. Without an anchor the key is NULL, so
// no key counts toward its rank.
func pollArgs(a *anchorRow, pattern string) []any {
	if a == nil {
		return []any{nil, pattern, int64(0), nil}
	}
	return []any{a.Key, pattern, a.N, a.Since}
}

// countSQL counts the table by state in one pass and, in the same pass,
// the anchor's rank: the matching rows that sort before it. There is one
// statement per order so that the rank's condition is fixed when the
// statement is planned: under a generic plan a CASE on the order would be
// evaluated for every row. The clock is read once (CTE c). For the waiters order the pass
// counts keys before the anchor's, and the waiter table corrects for waited
// keys (pollSQL).
//
// $1 anchor key (NULL: no rank), $2 pattern and, in the column orders, $3
// the anchor's value in the sort column (countArgs).
var countSQL = map[Sort]string{
	SortKey:     countWithRank(`l.lock_key < $1::text`),
	SortTTL:     countWithRank(`(` + ttlPosition + `, l.lock_key) < ($3::timestamptz, $1::text)`),
	SortToken:   countWithRank(`$1::text IS NOT NULL AND l.fence_token > $3::bigint`), // $1 typed, as in the others
	SortHeldFor: countWithRank(`(l.acquired_at, l.lock_key) < ($3::timestamptz, $1::text)`),
	SortWaiters: countWithRank(`l.lock_key < $1::text`),
}

// countWithRank is the count statement counting rows before the anchor
// with rankCond. Each key's state is the readers' rule's
// (distributed_lock_key_state, as distributed_lock_state shows it),
// worked out once per row in a subquery that OFFSET 0 keeps apart: merged
// into the counts, its expression would be evaluated once per count. The
// rank reads the table's own columns, as the orders do. It joins
// constants only.
func countWithRank(rankCond string) string {
	return `
WITH c AS (SELECT distributed_lock_now() AS ts)
SELECT
    count(*) AS total,
    count(*) FILTER (WHERE s.state IN ('held', 'expiring')) AS held,
    count(*) FILTER (WHERE s.state = 'expiring') AS expiring,
    count(*) FILTER (WHERE s.state = 'expired') AS expired,
    count(*) FILTER (WHERE s.state IN ('delayed', 'kept')) AS delayed,
    count(*) FILTER (WHERE s.state = 'free') AS free,
    count(*) FILTER (WHERE s.matching) AS matching,
    count(*) FILTER (WHERE s.matching AND s.ranked) AS scan_rank,
    (SELECT ts FROM c) AS taken_at
FROM (SELECT distributed_lock_key_state(l, c.ts) AS state, ` + matchCond + ` AS matching, ` + rankCond + ` AS ranked
      FROM distributed_lock l CROSS JOIN c WHERE l.slot = 0 OFFSET 0) s`
}

type countRow struct {
	Total    int64     `db:"total"`
	Held     int64     `db:"held"`
	Expiring int64     `db:"expiring"`
	Expired  int64     `db:"expired"`
	Delayed  int64     `db:"delayed"`
	Free     int64     `db:"free"`
	Matching int64     `db:"matching"`
	ScanRank int64     `db:"scan_rank"`
	TakenAt  time.Time `db:"taken_at"`
}

// countArgs are the count statement's arguments. Without an anchor the key
// and value are NULL, so no row counts toward the rank.
func countArgs(s Sort, a *anchorRow, pattern string) []any {
	var key, value any
	if a != nil {
		key, value = a.Key, sortValue(s, *a)
	}
	args := []any{key, pattern}
	if s.byColumn() {
		args = append(args, value)
	}
	return args
}

// Counts are the numbers of a page that cost a pass over the lock table:
// the rows by state and those matching the filter, as of TakenAt. Handed
// back as ListQuery.Counts, they are reused until due, so a poll of a
// large table does not pay that pass every time.
type Counts struct {
	All, Held, Expiring, Expired, Delayed, Free int64
	// Matching counts rows that pass the filter the counts were taken under.
	Matching int64
	// TakenAt is the database's clock when they were counted; Took is how
	// long the count statement took, as the client saw it.
	TakenAt time.Time
	Took    time.Duration
	// The filter and order they were counted in: the caller's rank, which
	// stands in for a count between counts, is a position in that order.
	pattern string
	sort    Sort
}

// passShare bounds what a pass over the table costs the server: the
// counts, and a column order's window (Order), are due again once
// passShare times what the last such pass took has passed, so each takes
// at most 1/passShare of the time. Small tables are counted on every poll
// (a 1 ms count is due after 20 ms); a million locks (a count of about
// 200 ms) every few seconds.
const passShare = 20

// due says whether c must be counted again at now (the database's clock)
// for a page in order s under pattern: never counted, counted under
// another filter or order, or older than passShare times what counting
// took.
func (c Counts) due(s Sort, pattern string, now time.Time) bool {
	return c.TakenAt.IsZero() || c.pattern != pattern || c.sort != s || now.Sub(c.TakenAt) >= passShare*c.Took
}

// Age is how old the counts were at now (the database's clock).
func (c Counts) Age(now time.Time) time.Duration { return now.Sub(c.TakenAt) }

// counted runs the count statement.
func counted(ctx context.Context, db store.DBTX, s Sort, a *anchorRow, pattern string) (Counts, int64, error) {
	start := time.Now()
	r, _, err := maybeOne[countRow](db.Query(ctx, countSQL[s], countArgs(s, a, pattern)...))
	if err != nil {
		return Counts{}, 0, err
	}
	return Counts{All: r.Total, Held: r.Held, Expiring: r.Expiring, Expired: r.Expired, Delayed: r.Delayed, Free: r.Free,
		Matching: r.Matching, TakenAt: r.TakenAt, Took: time.Since(start), pattern: pattern, sort: s}, r.ScanRank, nil
}
