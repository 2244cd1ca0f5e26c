package store

import "time"

// totalsSQL counts the table by state in one pass (the totals need that
// pass anyway) and, in the same pass, the anchor's rank: the matching rows
// that sort before it. $1 anchor key (NULL: no rank), $2 pattern, $3 sort,
// $4..$8 the anchor's expires_at, fence_token, acquired_at, waiter count and
// oldest wait. For the waiters order the pass counts keys before the
// anchor's, and the small waiter table corrects for waited keys.
const totalsSQL = `
WITH ` + liveWaitersCTE + `,
seg_a AS (
    SELECT l.lock_key, w.n, w.since FROM w JOIN distributed_lock l ON l.lock_key = w.lock_key
    WHERE ` + matchCond + `)
SELECT
    count(*) AS total,
    count(*) FILTER (WHERE l.st IN ('held', 'expiring')) AS held,
    count(*) FILTER (WHERE l.st = 'expiring') AS expiring,
    count(*) FILTER (WHERE l.st = 'expired') AS expired,
    count(*) FILTER (WHERE l.st = 'free') AS free,
    count(*) FILTER (WHERE l.m) AS matching,
    count(*) FILTER (WHERE l.m AND CASE $3::text
        WHEN 'ttl'   THEN (l.expires_at, l.lock_key) < ($4::timestamptz, $1::text)
        WHEN 'token' THEN l.fence_token > $5::bigint
        WHEN 'held'  THEN (l.acquired_at, l.lock_key) < ($6::timestamptz, $1::text)
        ELSE l.lock_key < $1::text
        END) AS scan_rank,
    (SELECT count(*) FROM seg_a) AS matching_waited,
    (SELECT count(*) FROM seg_a g WHERE g.lock_key < $1::text) AS waited_key_rank,
    (SELECT count(*) FROM seg_a g
     WHERE (-g.n, g.since, g.lock_key) < (-$7::bigint, coalesce($8::timestamptz, 'infinity'), $1::text)) AS waited_rank,
    (SELECT coalesce(sum(n), 0) FROM w)::bigint AS waiting,
    (SELECT count(*) FROM w) AS waited_keys,
    pg_is_in_recovery() AS in_recovery,
    current_setting('server_version') AS server_version,
    coalesce(max(l.ts), clock_timestamp()) AS db_now
FROM (
    -- OFFSET 0 keeps this subquery separate, so the state and the filter
    -- are computed once per row rather than once per aggregate.
    SELECT l.lock_key, l.expires_at, l.fence_token, l.acquired_at, c.ts,
           CASE WHEN l.released_at IS NOT NULL THEN 'free'
                WHEN l.expires_at <= c.ts THEN 'expired'
                WHEN l.expires_at - c.ts < l.ttl / 5 AND l.expires_at - c.ts < interval '10 seconds' THEN 'expiring'
                ELSE 'held' END AS st,
           ` + matchCond + ` AS m
    FROM distributed_lock l CROSS JOIN (SELECT clock_timestamp() AS ts) c
    OFFSET 0) l`

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
