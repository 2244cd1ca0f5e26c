package lockview_test

import (
	"context"
	"os"
	"testing"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// freeLocksSQL adds $1 free rows: by TTL they all sit at 'infinity', in
// key order, after the held and expired rows.
const freeLocksSQL = `
INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, released_at)
SELECT 'free:' || lpad(i::text, 6, '0'), 'worker-' || (i % 37), nextval('distributed_lock_fence_seq'),
       clock_timestamp() - interval '1 minute', interval '30 seconds',
       clock_timestamp() - interval '2 minutes', clock_timestamp() - interval '1 minute'
FROM generate_series(1, $1::int) i`

// TestNearSpanThroughSortIndexes polls with the previous page's span
// through the operator's sort indexes (docs/operations.md, "Large
// tables"), among many rows that share the order's value (the free rows
// by TTL), and counts the blocks the poll fetched from the order's index:
// a window's worth, not every row from the span to the end of that value.
// The pages must still be the full order's windows.
func TestNearSpanThroughSortIndexes(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	fillLocks(t, pool, 600, 40)
	if _, err := pool.Exec(ctx, freeLocksSQL, 30_000); err != nil {
		t.Fatal(err)
	}
	indexes, err := os.ReadFile("testdata/sort-indexes.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, string(indexes)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE distributed_lock`); err != nil {
		t.Fatal(err)
	}
	for s, index := range map[lockview.Sort]string{
		lockview.SortTTL: "distributed_lock_by_expiry", lockview.SortToken: "distributed_lock_by_token",
		lockview.SortHeldFor: "distributed_lock_by_acquired"} {
		t.Run(string(s), func(t *testing.T) {
			want := referenceKeys(t, pool, s, "")
			// poll returns the page around want[at] and the blocks of the
			// order's index it fetched (in its own transaction, whose
			// counters hold only what it did).
			poll := func(at int, near lockview.Span) (lockview.Page, int64) {
				t.Helper()
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				fetched := func() (n int64) {
					if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_blocks_fetched($1::regclass)`, index).Scan(&n); err != nil {
						t.Fatal(err)
					}
					return n
				}
				before := fetched()
				page, err := lockview.ListLocks(ctx, tx, lockview.ListQuery{Sort: s, Anchor: want[at], Before: 5, After: 6, Near: near})
				if err != nil {
					t.Fatal(err)
				}
				blocks := fetched() - before
				requireWindow(t, page, want, at, 5, 6)
				return page, blocks
			}
			// A third into the free rows by TTL: 20,000 of them follow.
			for _, at := range []int{len(want) - 20_000, len(want) / 2, 3, len(want) - 2} {
				first, _ := poll(at, lockview.Span{})
				// The anchor row's value, the anchor's descent and a page or
				// two of entries either side.
				if _, blocks := poll(at, first.Span); blocks > 12 {
					t.Errorf("anchor %d: the poll near its span fetched %d blocks of %s, want a window's worth", at, blocks, index)
				}
				for _, moved := range []int{at - 1, at + 4, at + 30, at - 7} {
					if moved >= 0 && moved < len(want) {
						poll(moved, first.Span)
					}
				}
			}
		})
	}
}
