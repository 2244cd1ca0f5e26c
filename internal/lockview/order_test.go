package lockview_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
)

// moveSQL gives key $1 a new grant to 'thief': a new token, grant time and
// an hour's lease, so it moves in every column order.
const moveSQL = `UPDATE distributed_lock SET owner_id = 'thief', fence_token = nextval('distributed_lock_fence_seq'),
    acquired_at = clock_timestamp(), expires_at = clock_timestamp() + interval '1 hour', ttl = interval '1 hour',
    released_at = NULL WHERE lock_key = $1`

// A column order's window, handed back as ListQuery.Order, stands in for
// the ordering read while that is not due: the rows are re-read as they
// are now (new owners and leases, ended leases, deleted rows gone) in the
// order as it was. A selection near the window's edge, another order or
// filter, or a read cheap enough to repeat are ordered afresh.
func TestListLocksKeepsAnExpensiveOrder(t *testing.T) {
	pool := testdb.New(t)
	fillLocks(t, pool, 300, 40)
	ctx := context.Background()
	for _, s := range []lockview.Sort{lockview.SortTTL, lockview.SortToken, lockview.SortHeldFor} {
		t.Run(string(s), func(t *testing.T) {
			want := referenceKeys(t, pool, s, "")
			q := lockview.ListQuery{Sort: s, Anchor: want[150], Before: 5, After: 6}
			first, err := lockview.ListLocks(ctx, pool, q)
			if err != nil {
				t.Fatal(err)
			}
			requireWindow(t, first, want, 150, 5, 6)
			if first.Order.TakenAt.IsZero() || first.Order.Took <= 0 || first.Order.Age(first.DBNow) != 0 {
				t.Fatalf("a fresh window's order: %+v; want taken now, with its cost", first.Order)
			}
			kept := first.Order
			kept.Took = time.Hour // expensive, and not due while the test runs
			// A poll handed the last page's span and order and, between
			// ordering reads, its counts, not yet due. The polls expected
			// to order afresh count too, so the rank they give is exact.
			poll := func(anchor string, order lockview.Order, between bool) lockview.Page {
				t.Helper()
				q := q
				q.Anchor, q.Order, q.Near = anchor, order, first.Span
				if between {
					q.Counts = first.Counts
					q.Counts.Took = time.Hour
				}
				page, err := lockview.ListLocks(ctx, pool, q)
				if err != nil {
					t.Fatal(err)
				}
				return page
			}
			t.Cleanup(func() { // the other orders' subtests start from fillLocks' rows
				if _, err := pool.Exec(ctx, `TRUNCATE distributed_lock, distributed_lock_waiter`); err != nil {
					t.Fatal(err)
				}
				fillLocks(t, pool, 300, 40)
			})
			window := keysOf(first.Rows)
			moved, released, deleted := window[7], window[3], window[2]
			for _, st := range []struct {
				sql string
				key string
			}{{moveSQL, moved}, {`UPDATE distributed_lock SET released_at = clock_timestamp() WHERE lock_key = $1`, released},
				{`DELETE FROM distributed_lock WHERE lock_key = $1`, deleted}} {
				if _, err := pool.Exec(ctx, st.sql, st.key); err != nil {
					t.Fatal(err)
				}
			}

			page := poll(want[150], kept, true)
			if got := keysOf(page.Rows); !slices.Equal(got, slices.DeleteFunc(slices.Clone(window), func(k string) bool { return k == deleted })) {
				t.Fatalf("between ordering reads: rows %q; want the kept window %q without the deleted %q", got, window, deleted)
			}
			if page.Order != kept || page.Order.Age(page.DBNow) <= 0 || page.Rows[page.Anchor].Key != want[150] || page.AnchorRank != 150 {
				t.Errorf("between ordering reads: order %+v, anchor %d rank %d; want the kept order, aged, anchor at rank 150",
					page.Order, page.Anchor, page.AnchorRank)
			}
			for _, r := range page.Rows {
				switch {
				case r.Key == moved && (r.Owner != "thief" || r.Remaining < 59*time.Minute):
					t.Errorf("moved row %q: owner %q, %s left; want thief's hour", r.Key, r.Owner, r.Remaining)
				case r.Key == released && r.ReleasedAt == nil:
					t.Errorf("released row %q is not free", r.Key)
				}
			}
			if page.Span != first.Span {
				t.Errorf("between ordering reads the span changed: %+v, want the ordering read's", page.Span)
			}
			// A selection that moved inside the window: the same order,
			// around it.
			if page := poll(window[6], kept, true); page.Order != kept || page.Rows[page.Anchor].Key != window[6] || page.Rows[0].Key != window[1] {
				t.Errorf("selection moved inside the window: rows %q anchor %d; want the kept window from %q", keysOf(page.Rows), page.Anchor, window[1])
			}

			now := referenceKeys(t, pool, s, "")
			at := slices.Index(now, window[9])
			fresh := func(name string, page lockview.Page, at int) {
				t.Helper()
				if page.Order.TakenAt == kept.TakenAt {
					t.Errorf("%s: the kept order was used", name)
				}
				requireWindow(t, page, now, at, 5, 6)
			}
			fresh("near the edge", poll(window[9], kept, false), at)
			cheap := kept
			cheap.Took = time.Millisecond
			fresh("cheap to order", poll(window[9], cheap, false), at)
			due := kept
			due.TakenAt = due.TakenAt.Add(-21 * time.Hour)
			fresh("due", poll(window[9], due, false), at)
			other := q
			other.Sort, other.Anchor, other.Order = lockview.SortKey, want[150], kept
			if page, err := lockview.ListLocks(ctx, pool, other); err != nil || page.Order != (lockview.Order{}) {
				t.Errorf("by key: order %+v, %v; want none (the key order is read through its index)", page.Order, err)
			}
			filtered := q
			filtered.Filter, filtered.Order = "job", kept
			page, err = lockview.ListLocks(ctx, pool, filtered)
			if err != nil || page.Order.TakenAt == kept.TakenAt {
				t.Errorf("another filter: order %+v, %v; want ordered afresh", page.Order, err)
			}
		})
	}
}
