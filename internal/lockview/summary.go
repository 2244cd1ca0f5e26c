package lockview

import "time"

// totalsSQL counts the table by state in one pass (the totals need that
// pass anyway) and, in the same pass, the anchor's rank: the matching rows
// that sort before it. There is one statement per order so that the rank's
// condition is fixed when the statement is planned: under a generic plan a
// CASE on the order would be evaluated for every row. Each count is a plain
// comparison per row; the clock is read once (CTE c), and the division in
// "expiring" is reached only by rows with under 10 s left. Together that
// halves the pass against computing each row's state first.
//
// $1 anchor key (NULL: no rank), $2 pattern, $3 the anchor's waiter count,
// $4 its oldest wait and, in the column orders, $5 its value in the sort
// column (totalsArgs). For the waiters order the pass counts keys before
// the anchor's, and the small waiter table corrects for waited keys.
var totalsSQL = map[Sort]string{
	SortKey:     totalsWithRank(`l.lock_key < $1::text`),
	SortTTL:     totalsWithRank(`(` + ttlPosition + `, l.lock_key) < ($5::timestamptz, $1::text)`),
	SortToken:   totalsWithRank(`l.fence_token > $5::bigint`),
	SortHeldFor: totalsWithRank(`(l.acquired_at, l.lock_key) < ($5::timestamptz, $1::text)`),
	SortWaiters: totalsWithRank(`l.lock_key < $1::text`),
}

// totalsWithRank is the totals statement counting rows before the anchor
// with rankCond. It joins constants only.
func totalsWithRank(rankCond string) string {
	return `
WITH ` + liveWaitersCTE + `,
c AS (SELECT clock_timestamp() AS ts),
seg_a AS (
    SELECT l.lock_key, w.n, w.since FROM w JOIN distributed_lock l ON l.lock_key = w.lock_key
    WHERE ` + matchCond + `)
SELECT
    count(*) AS total,
    count(*) - count(*) FILTER (WHERE l.released_at IS NOT NULL OR l.expires_at <= (SELECT ts FROM c)) AS held,
    count(*) FILTER (WHERE l.released_at IS NULL AND l.expires_at > (SELECT ts FROM c)
        AND l.expires_at < (SELECT ts FROM c) + interval '10 seconds'
        AND l.expires_at - (SELECT ts FROM c) < l.ttl / 5) AS expiring,
    count(*) FILTER (WHERE l.released_at IS NULL AND l.expires_at <= (SELECT ts FROM c)) AS expired,
    count(*) FILTER (WHERE l.released_at IS NOT NULL) AS free,
    count(*) FILTER (WHERE ` + matchCond + `) AS matching,
    count(*) FILTER (WHERE ` + matchCond + ` AND ` + rankCond + `) AS scan_rank,
    (SELECT count(*) FROM seg_a) AS matching_waited,
    (SELECT count(*) FROM seg_a g WHERE g.lock_key < $1::text) AS waited_key_rank,
    (SELECT count(*) FROM seg_a g
     WHERE (-g.n, g.since, g.lock_key) < (-$3::bigint, coalesce($4::timestamptz, 'infinity'), $1::text)) AS waited_rank,
    (SELECT coalesce(sum(n), 0) FROM w)::bigint AS waiting,
    (SELECT count(*) FROM w) AS waited_keys,
    pg_is_in_recovery() AS in_recovery,
    current_setting('server_version') AS server_version,
    (SELECT ts FROM c) AS db_now
FROM distributed_lock l`
}

type totalsRow struct {
	Total          int64     `db:"total"`
	Held           int64     `db:"held"`
	Expiring       int64     `db:"expiring"`
	Expired        int64     `db:"expired"`
	Free           int64     `db:"free"`
	Waiting        int64     `db:"waiting"`
	WaitedKeys     int64     `db:"waited_keys"`
	Matching       int64     `db:"matching"`
	ScanRank       int64     `db:"scan_rank"`
	MatchingWaited int64     `db:"matching_waited"`
	WaitedKeyRank  int64     `db:"waited_key_rank"`
	WaitedRank     int64     `db:"waited_rank"`
	InRecovery     bool      `db:"in_recovery"`
	ServerVersion  string    `db:"server_version"`
	DBNow          time.Time `db:"db_now"`
}

// totalsArgs are the totals statement's arguments. Without an anchor the
// key and value are NULL, so no row counts toward the rank.
func totalsArgs(s Sort, a *anchorRow, pattern string) []any {
	var anchor anchorRow
	var key, value any
	if a != nil {
		anchor, key, value = *a, a.Key, sortValue(s, *a)
	}
	args := []any{key, pattern, anchor.N, anchor.Since}
	if s.byColumn() {
		args = append(args, value)
	}
	return args
}
