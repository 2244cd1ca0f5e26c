package lockview

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// A reference table (store.ShapeReference) is the reference service's
// distributed_lock, not migrated: lock_key, owner_id, fence_token and
// expires_at, the last as the JVM's local time (timestamp without time
// zone), which the reads below take in the session's TimeZone, as migrate
// does by default. Every row is held or expired (the reference deletes on
// release); grant times, TTLs, waiters and events do not exist. Such tables
// are small and about to be adopted, so a page is read whole, in the
// order asked, and windowed here.

// referenceColumns reads a reference row with one clock reading c(ts). NULLs, which
// migrate refuses, are shown as empty, 0, and an expiry of now (expired).
const referenceColumns = `l.lock_key::text AS lock_key, coalesce(l.owner_id::text, '') AS owner_id,
    coalesce(l.fence_token, 0)::bigint AS fence_token,
    CASE WHEN isfinite(l.expires_at) THEN l.expires_at::timestamptz ELSE c.ts END AS expires_at,
    CASE WHEN isfinite(l.expires_at) THEN l.expires_at::timestamptz - c.ts ELSE interval '0' END AS remaining,
    c.ts AS db_now, ($1 = '' OR l.lock_key ILIKE $1 OR l.owner_id ILIKE $1) AS matches`

// referenceOrders are the console's orders on a reference table. It records neither
// grant times nor waiters: those orders fall back to the key.
var referenceOrders = map[Sort]string{
	SortKey:     `lock_key`,
	SortTTL:     `expires_at, lock_key`,
	SortToken:   `fence_token DESC, lock_key`,
	SortHeldFor: `lock_key`,
	SortWaiters: `lock_key`,
}

// referenceSQL reads every row of a reference table in order s; $1 is likePattern's
// filter, which only marks rows (matches) so the totals count them all.
func referenceSQL(s Sort) string {
	return `SELECT ` + referenceColumns + `
FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c
ORDER BY ` + referenceOrders[s]
}

// referenceServerSQL is what a page says about the server.
const referenceServerSQL = `SELECT pg_is_in_recovery(), current_setting('server_version'), clock_timestamp()`

// referenceRow is a row as referenceSQL reads it: a Lock that is held or expired,
// with no TTL, grant time or release (referenceSQL has no such columns, so those
// fields stay zero).
type referenceRow struct {
	Lock
	Matches bool `db:"matches"`
}

// readReference reads a reference table's rows in order s, marking those pattern
// matches.
func readReference(ctx context.Context, db store.DBTX, s Sort, pattern string) ([]referenceRow, error) {
	rows, err := db.Query(ctx, referenceSQL(s), pattern)
	if err != nil {
		return nil, store.Interpret(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[referenceRow])
	if err != nil {
		return nil, store.Interpret(err)
	}
	return out, nil
}

// ListReference returns the rows of a reference table whose key starts with prefix,
// ordered by key, for `lockctl ls` ("" returns every row).
func ListReference(ctx context.Context, db store.DBTX, prefix string) ([]Lock, error) {
	rows, err := readReference(ctx, db, SortKey, "")
	if err != nil {
		return nil, err
	}
	var locks []Lock
	for _, r := range rows {
		if strings.HasPrefix(r.Key, prefix) {
			locks = append(locks, r.Lock)
		}
	}
	return locks, nil
}

// ListReferenceLocks is ListLocks on a reference table: the same window, totals and
// server facts, with Page.Reference set. Near is ignored.
func ListReferenceLocks(ctx context.Context, db store.DBTX, q ListQuery) (Page, error) {
	if err := checkQuery(q, referenceOrders); err != nil {
		return Page{}, err
	}
	page := Page{Anchor: -1, Reference: true}
	if err := db.QueryRow(ctx, referenceServerSQL).Scan(&page.InRecovery, &page.ServerVersion, &page.DBNow); err != nil {
		return Page{}, store.Interpret(err)
	}
	rows, err := readReference(ctx, db, q.Sort, likePattern(q.Filter))
	if err != nil {
		return Page{}, err
	}
	var matching []ListedLock
	for _, r := range rows {
		page.Totals.All++
		if r.State() == lockdb.StateExpired {
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
