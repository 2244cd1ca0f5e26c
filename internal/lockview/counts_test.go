package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// A page handed its last counts reuses them until they are due: the rows
// are read afresh, the totals stay as counted (and say when), and a change
// of filter or their age has them counted again.
func TestListLocksReusesCounts(t *testing.T) {
	pool := testdb.New(t)
	fillLocks(t, pool, 300, 40)
	ctx := context.Background()
	want := referenceKeys(t, pool, lockview.SortKey, "")
	q := lockview.ListQuery{Sort: lockview.SortKey, Anchor: want[100], Rank: 100, Before: 5, After: 6}
	first, err := lockview.ListLocks(ctx, pool, q)
	if err != nil {
		t.Fatal(err)
	}
	if first.Counts.TakenAt.IsZero() || first.Counts.Took <= 0 || first.Matching != 300 || first.Totals.All != 300 {
		t.Fatalf("first poll: counts %+v, matching %d; want 300 rows counted now", first.Counts, first.Matching)
	}
	// A key that sorts just after the anchor: the window shows it at once,
	// the reused counts do not.
	if _, err := pool.Exec(ctx, `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ($1 || '!', 'late', nextval('distributed_lock_fence_seq'), now() + interval '1 minute', interval '1 minute', now())`, want[100]); err != nil {
		t.Fatal(err)
	}
	// Due after passShare times what counting took: long enough here.
	counts := first.Counts
	counts.Took = time.Hour
	q.Counts = counts
	next, err := lockview.ListLocks(ctx, pool, q)
	if err != nil {
		t.Fatal(err)
	}
	if next.Counts.TakenAt != first.Counts.TakenAt || next.Totals.All != 300 || next.Matching != 300 {
		t.Errorf("reused counts: %+v, %d rows; want the first poll's", next.Counts, next.Totals.All)
	}
	if next.AnchorRank != 100 || next.Rows[next.Anchor].Key != want[100] || next.Rows[next.Anchor+1].Key != want[100]+"!" {
		t.Errorf("with reused counts: anchor rank %d, rows %q; want rank 100 and the new key after the anchor",
			next.AnchorRank, keysOf(next.Rows))
	}
	if age := next.Counts.Age(next.DBNow); age <= 0 {
		t.Errorf("reused counts are %s old; want their age", age)
	}

	testdb.Clock(t, pool).Advance(21 * first.Counts.Took) // the first counts, as taken, are due now
	for name, c := range map[string]struct {
		filter string
		sort   lockview.Sort
		counts lockview.Counts
	}{
		"another filter": {"job:", lockview.SortKey, counts},
		"another order":  {"", lockview.SortToken, counts},
		"due":            {"", lockview.SortKey, first.Counts},
	} {
		q := q
		q.Filter, q.Sort, q.Counts = c.filter, c.sort, c.counts
		page, err := lockview.ListLocks(ctx, pool, q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Counts.TakenAt == first.Counts.TakenAt || page.Totals.All != 301 {
			t.Errorf("%s: counts %+v, %d rows; want counted again, 301 rows", name, page.Counts, page.Totals.All)
		}
	}
}

// Reused counts are corrected by what the window shows at an end of the
// order: a rank kept by the caller that is off, and rows added since.
func TestListLocksReconcilesReusedCounts(t *testing.T) {
	pool := testdb.New(t)
	fillLocks(t, pool, 50, 40)
	ctx := context.Background()
	want := referenceKeys(t, pool, lockview.SortKey, "")
	first, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{Sort: lockview.SortKey, Anchor: want[2], Before: 5, After: 60})
	if err != nil {
		t.Fatal(err)
	}
	counts := first.Counts
	counts.Took = time.Hour
	if _, err := pool.Exec(ctx, `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('~last', 'late', nextval('distributed_lock_fence_seq'), now() + interval '1 minute', interval '1 minute', now())`); err != nil {
		t.Fatal(err)
	}
	page, err := lockview.ListLocks(ctx, pool, lockview.ListQuery{Sort: lockview.SortKey, Anchor: want[2], Rank: 9,
		Before: 5, After: 60, Counts: counts})
	if err != nil {
		t.Fatal(err)
	}
	if page.AnchorRank != 2 || page.Matching != 51 || page.Totals.All != 50 {
		t.Errorf("rank %d of %d (totals %d); want rank 2 of the 51 rows the window reaches, totals as counted (50)",
			page.AnchorRank, page.Matching, page.Totals.All)
	}
}
