package lockview_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// fillLocksSQL fills the table with n rows in every state: held with various
// TTLs, expired, released; a few keys get live waiters and one a dead one.
// Keys mix case so the collation's order (not byte order) matters.
const fillLocksSQL = `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at)
SELECT CASE WHEN i % 3 = 0 THEN 'Job:' ELSE 'job:' END || lpad(i::text, 6, '0'),
       'worker-' || (i % 37),
       nextval('distributed_lock_fence_seq'),
       clock_timestamp() + ((i::bigint * 7919) % 600 - 120) * interval '1 second',
       interval '300 seconds',
       clock_timestamp() - ((i::bigint * 104729) % 3600) * interval '1 second',
       CASE WHEN i % 10 = 0 THEN clock_timestamp() - interval '5 seconds' END
FROM generate_series(1, $1::int) i`

const fillWaitersSQL = `
INSERT INTO distributed_lock_waiter (lock_key, owner_id, waiting_since, seen_until)
SELECT l.lock_key, 'waiter-' || g, clock_timestamp() - (g * 3 + length(l.lock_key)) * interval '1 second',
       clock_timestamp() + CASE WHEN g = 9 THEN interval '-1 minute' ELSE interval '1 minute' END
FROM (SELECT lock_key, row_number() OVER (ORDER BY lock_key) AS r FROM distributed_lock) l,
     generate_series(1, 9) g
WHERE l.r % $1::int = 7 AND g <= 1 + l.r % 4 OR (l.r % $1::int = 7 AND g = 9)`

// referenceOrder is each sort's full order, computed the slow way.
var referenceOrder = map[lockview.Sort]string{
	lockview.SortKey:     `ORDER BY l.lock_key`,
	lockview.SortTTL:     `ORDER BY l.released_at IS NOT NULL, CASE WHEN l.released_at IS NULL THEN l.expires_at END, l.lock_key`,
	lockview.SortToken:   `ORDER BY l.fence_token DESC`,
	lockview.SortHeldFor: `ORDER BY l.acquired_at, l.lock_key`,
	lockview.SortWaiters: `ORDER BY coalesce(w.n, 0) DESC, coalesce(w.since, 'infinity'), l.lock_key`,
}

func referenceKeys(t *testing.T, pool *pgxpool.Pool, s lockview.Sort, pattern string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
SELECT l.lock_key FROM distributed_lock l LEFT JOIN (
    SELECT lock_key, count(*) AS n, min(waiting_since) AS since FROM distributed_lock_waiter
    WHERE seen_until > clock_timestamp() GROUP BY lock_key) w ON w.lock_key = l.lock_key
WHERE ($1 = '' OR l.lock_key ILIKE $1 OR l.owner_id ILIKE $1) `+referenceOrder[s], pattern)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

func fillLocks(t *testing.T, pool *pgxpool.Pool, n, waitEvery int) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, fillLocksSQL, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fillWaitersSQL, waitEvery); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE distributed_lock; ANALYZE distributed_lock_waiter`); err != nil {
		t.Fatal(err)
	}
}

func keysOf(rows []lockview.ListedLock) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}

// requireWindow fails t unless page is the window of want (the full order)
// around want[at]: up to before rows before it and after from it on, with
// the anchor at its rank.
func requireWindow(t *testing.T, page lockview.Page, want []string, at, before, after int) {
	t.Helper()
	lo, hi := max(0, at-before), min(len(want), at+after)
	if got := keysOf(page.Rows); !slices.Equal(got, want[lo:hi]) {
		t.Fatalf("anchor %d %q: window\n got %q\nwant %q", at, want[at], got, want[lo:hi])
	}
	if page.Rows[page.Anchor].Key != want[at] || page.AnchorRank != int64(at) {
		t.Fatalf("anchor %q: got index %d rank %d, want rank %d", want[at], page.Anchor, page.AnchorRank, at)
	}
}

// TestListLocksWindows checks every sort's window against the full order:
// the rows around the anchor, the anchor's rank, and the fallbacks when the
// anchor is missing.
func TestListLocksWindows(t *testing.T) {
	pool := testdb.New(t)
	fillLocks(t, pool, 600, 40)
	ctx := context.Background()
	for _, s := range lockview.Sorts {
		for _, filter := range []string{"", "worker-3", "JOB:0001"} {
			t.Run(fmt.Sprintf("%s/%q", s, filter), func(t *testing.T) {
				want := referenceKeys(t, pool, s, lockview.LikePattern(filter))
				if len(want) < 10 {
					t.Fatalf("fillLocks gave only %d rows for %q", len(want), filter)
				}
				for _, at := range []int{0, 3, len(want) / 2, len(want) - 2, len(want) - 1} {
					page, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{
						Filter: filter, Sort: s, Anchor: want[at], Before: 5, After: 6})
					if err != nil {
						t.Fatal(err)
					}
					requireWindow(t, page, want, at, 5, 6)
					if page.Matching != int64(len(want)) {
						t.Fatalf("matching = %d, want %d", page.Matching, len(want))
					}
				}
				// No anchor: the row at Rank, clamped; -1 is the last.
				for rank, wantRank := range map[int]int{0: 0, 7: 7, len(want) - 3: len(want) - 3, -1: len(want) - 1, len(want) + 50: len(want) - 1} {
					page, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{
						Filter: filter, Sort: s, Anchor: "gone", Rank: rank, Before: 2, After: 3})
					if err != nil {
						t.Fatal(err)
					}
					if page.Rows[page.Anchor].Key != want[wantRank] || page.AnchorRank != int64(wantRank) {
						t.Fatalf("rank %d: anchor %q (rank %d), want %q (rank %d)", rank,
							page.Rows[page.Anchor].Key, page.AnchorRank, want[wantRank], wantRank)
					}
				}
			})
		}
	}
}

// TestListLocksNearSpan polls again with the previous page's Span, as the
// console does, for anchors inside, beside and far from that span, with
// rows moved in between: every page must equal the full order's window.
// The cost is counted in sequential scans of the table in the poll's
// transaction: a span still holding the window must save some (both sides
// come from one pass instead of a pass each).
func TestListLocksNearSpan(t *testing.T) {
	pool := testdb.New(t)
	fillLocks(t, pool, 600, 40)
	ctx := context.Background()
	for _, s := range []lockview.Sort{lockview.SortTTL, lockview.SortToken, lockview.SortHeldFor} {
		for _, filter := range []string{"", "worker-3"} {
			t.Run(fmt.Sprintf("%s/%q", s, filter), func(t *testing.T) {
				want := referenceKeys(t, pool, s, lockview.LikePattern(filter))
				poll := func(at int, near lockview.Span) (lockview.Page, int64) {
					t.Helper()
					tx, err := pool.Begin(ctx)
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback(ctx)
					// The counter holds what the backend has not reported yet,
					// which may include earlier transactions: count the change.
					scans := func() (n int64) {
						if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_numscans('distributed_lock'::regclass)`).Scan(&n); err != nil {
							t.Fatal(err)
						}
						return n
					}
					before := scans()
					page, err := lockview.ListLocks(ctx, tx, lockview.ListQuery{
						Filter: filter, Sort: s, Anchor: want[at], Before: 5, After: 6, Near: near})
					if err != nil {
						t.Fatal(err)
					}
					passes := scans() - before
					requireWindow(t, page, want, at, 5, 6)
					return page, passes
				}
				for _, at := range []int{0, 2, len(want) / 2, len(want) - 3, len(want) - 1} {
					first, full := poll(at, lockview.Span{})
					if _, near := poll(at, first.Span); near >= full {
						t.Errorf("anchor %d: %d scans of the table with the span, %d without; want fewer", at, near, full)
					}
					for _, moved := range []int{at - 1, at + 1, at - 5, at + 7, len(want) - 1 - at} {
						if moved >= 0 && moved < len(want) {
							poll(moved, first.Span)
						}
					}
				}
				// A span from another order or filter is ignored.
				other, _ := poll(len(want)/2, lockview.Span{})
				otherSort := lockview.SortToken
				if s == lockview.SortToken {
					otherSort = lockview.SortTTL
				}
				otherOrder, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{Sort: otherSort, Anchor: want[3], Before: 5, After: 6})
				if err != nil {
					t.Fatal(err)
				}
				poll(3, otherOrder.Span)
				otherFilter, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{Filter: "job:0002", Sort: s, Anchor: want[3], Before: 5, After: 6})
				if err != nil {
					t.Fatal(err)
				}
				poll(3, otherFilter.Span)
				// Rows leaving and entering the span between polls.
				mid := len(want) / 2
				if _, err := pool.Exec(ctx, `UPDATE distributed_lock SET expires_at = expires_at + interval '1 hour',
    acquired_at = acquired_at - interval '1 hour', fence_token = nextval('distributed_lock_fence_seq')
WHERE lock_key = ANY($1)`, []string{want[mid-2], want[mid+3]}); err != nil {
					t.Fatal(err)
				}
				want = referenceKeys(t, pool, s, lockview.LikePattern(filter))
				at := slices.Index(want, other.Rows[other.Anchor].Key)
				poll(at, other.Span)
			})
		}
	}
}

func TestListLocksTotalsAndWaiters(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	page, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{Sort: lockview.SortKey, After: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != 0 || page.Anchor != -1 || page.Totals.All != 0 || page.InRecovery || page.ServerVersion == "" {
		t.Fatalf("empty table: %+v", page)
	}
	fillLocks(t, pool, 100, 30)
	// 5 s left of 60 is expiring; 5 s left of 10 is not (a fifth is 2 s).
	if _, err := pool.Exec(ctx, `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
SELECT k, 'o', nextval('distributed_lock_fence_seq'), clock_timestamp() + interval '5 seconds', ttl, clock_timestamp()
FROM (VALUES ('soon:60', interval '60 seconds'), ('soon:10', interval '10 seconds')) v(k, ttl)`); err != nil {
		t.Fatal(err)
	}
	page, err = lockview.ListLocks(ctx, pool, lockview.ListQuery{Sort: lockview.SortWaiters, After: 200})
	if err != nil {
		t.Fatal(err)
	}
	var counted lockview.Totals
	var waiting int64
	for _, r := range page.Rows {
		counted.All++
		switch r.State() {
		case lockdb.StateFree:
			counted.Free++
		case lockdb.StateExpired:
			counted.Expired++
		case lockdb.StateExpiring:
			counted.Expiring++
			counted.Held++
		default:
			counted.Held++
		}
		waiting += r.Waiters
		if r.Waiters > 0 && (r.OldestSince == nil || r.OldestWait <= 0) {
			t.Fatalf("%s: %d waiters but oldest wait %v", r.Key, r.Waiters, r.OldestWait)
		}
	}
	tot := page.Totals
	// The expiries are whole seconds from fillLocks's clock, so within the
	// second after it no row crosses expiry or an "expiring" line.
	if tot.All != counted.All || tot.Free != counted.Free || tot.Expired != counted.Expired ||
		tot.Held != counted.Held || tot.Expiring != counted.Expiring || tot.Expiring != 1 {
		t.Fatalf("totals %+v, counted from rows %+v", tot, counted)
	}
	if tot.Waiting != waiting || waiting == 0 || tot.WaitedKeys == 0 {
		t.Fatalf("waiting %d (on %d keys), rows say %d", tot.Waiting, tot.WaitedKeys, waiting)
	}
	if page.Rows[0].Waiters < page.Rows[len(page.Rows)-1].Waiters || page.Rows[0].Waiters == 0 {
		t.Fatalf("waiters sort: first row has %d waiters", page.Rows[0].Waiters)
	}
}

func TestLikePatternEscapes(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	for _, k := range []string{"100%", "1000", "a_b", "axb", `back\slash`} {
		if _, err := pool.Exec(ctx, `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
VALUES ($1, 'o', nextval('distributed_lock_fence_seq'), clock_timestamp() + interval '1 minute', interval '1 minute', clock_timestamp())`, k); err != nil {
			t.Fatal(err)
		}
	}
	for filter, want := range map[string][]string{"0%": {"100%"}, "_": {"a_b"}, `\`: {`back\slash`}, "A": {"a_b", "axb", `back\slash`}} {
		page, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{Filter: filter, Sort: lockview.SortKey, After: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(page.Rows); !slices.Equal(got, want) {
			t.Errorf("filter %q: got %q, want %q", filter, got, want)
		}
	}
}
