package lockview

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// A seed table (store.ShapeSeed) is the reference service's
// distributed_lock, not migrated: lock_key, owner_id, fence_token and
// expires_at, the last as the JVM's local time (timestamp without time
// zone), which the reads below take in the session's TimeZone, as migrate
// does by default. Every row is held or expired (the reference deletes on
// release); grant times, TTLs, waiters and events do not exist. Such tables
// are small and about to be adopted, so a page is read whole, in the
// order asked, and windowed here.

// seedColumns reads a seed row with one clock reading c(ts). NULLs, which
// migrate refuses, are shown as empty, 0, and an expiry of now (expired).
const seedColumns = `l.lock_key::text AS lock_key, coalesce(l.owner_id::text, '') AS owner_id,
    coalesce(l.fence_token, 0)::bigint AS fence_token,
    CASE WHEN isfinite(l.expires_at) THEN l.expires_at::timestamptz ELSE c.ts END AS expires_at,
    CASE WHEN isfinite(l.expires_at) THEN l.expires_at::timestamptz - c.ts ELSE interval '0' END AS remaining,
    c.ts AS db_now, ($1 = '' OR l.lock_key ILIKE $1 OR l.owner_id ILIKE $1) AS matches`

// seedOrders are the console's orders on a seed table. It records neither
// grant times nor waiters: those orders fall back to the key.
var seedOrders = map[Sort]string{
	SortKey:     `lock_key`,
	SortTTL:     `expires_at, lock_key`,
	SortToken:   `fence_token DESC, lock_key`,
	SortHeldFor: `lock_key`,
	SortWaiters: `lock_key`,
}

// seedSQL reads every row of a seed table in order s; $1 is likePattern's
// filter, which only marks rows (matches) so the totals count them all.
func seedSQL(s Sort) string {
	return `SELECT ` + seedColumns + `
FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c
ORDER BY ` + seedOrders[s]
}

// seedServerSQL is what a page says about the server.
const seedServerSQL = `SELECT pg_is_in_recovery(), current_setting('server_version'), clock_timestamp()`

// seedRow is a row as seedSQL reads it: a Lock that is held or expired,
// with no TTL, grant time or release (seedSQL has no such columns, so those
// fields stay zero).
type seedRow struct {
	store.Lock
	Matches bool `db:"matches"`
}

// readSeed reads a seed table's rows in order s, marking those pattern
// matches.
func readSeed(ctx context.Context, db store.DBTX, s Sort, pattern string) ([]seedRow, error) {
	rows, err := db.Query(ctx, seedSQL(s), pattern)
	if err != nil {
		return nil, store.Interpret(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[seedRow])
	if err != nil {
		return nil, store.Interpret(err)
	}
	return out, nil
}

// ListSeed returns the rows of a seed table whose key starts with prefix,
// ordered by key, for `lockctl ls` ("" returns every row).
func ListSeed(ctx context.Context, db store.DBTX, prefix string) ([]store.Lock, error) {
	rows, err := readSeed(ctx, db, SortKey, "")
	if err != nil {
		return nil, err
	}
	var locks []store.Lock
	for _, r := range rows {
		if strings.HasPrefix(r.Key, prefix) {
			locks = append(locks, r.Lock)
		}
	}
	return locks, nil
}

// ListSeedLocks is ListLocks on a seed table: the same window, totals and
// server facts, with Page.Seed set. Near is ignored.
func ListSeedLocks(ctx context.Context, db store.DBTX, q ListQuery) (Page, error) {
	if err := checkQuery(q, seedOrders); err != nil {
		return Page{}, err
	}
	page := Page{Anchor: -1, Seed: true}
	if err := db.QueryRow(ctx, seedServerSQL).Scan(&page.InRecovery, &page.ServerVersion, &page.DBNow); err != nil {
		return Page{}, store.Interpret(err)
	}
	rows, err := readSeed(ctx, db, q.Sort, likePattern(q.Filter))
	if err != nil {
		return Page{}, err
	}
	var matching []ListedLock
	for _, r := range rows {
		page.Totals.All++
		if r.State() == locker.StateExpired {
			page.Totals.Expired++
		} else {
			page.Totals.Held++
		}
		if r.Matches {
			matching = append(matching, ListedLock{Lock: r.Lock})
		}
	}
	page.Matching = int64(len(matching))
	if len(matching) == 0 {
		return page, nil
	}
	at := -1
	for i, r := range matching {
		if q.Anchor != "" && r.Key == q.Anchor {
			at = i
			break
		}
	}
	if at < 0 {
		at = q.Rank
		if at < 0 || at >= len(matching) {
			at = len(matching) - 1
		}
	}
	from, to := max(0, at-q.Before), min(len(matching), at+q.After)
	page.Rows = matching[from:to]
	page.Anchor, page.AnchorRank = at-from, int64(at)
	return page, nil
}
