package lockview_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// referenceTable is the reference service's table with held and expired locks,
// written by a JVM in Seoul and read by a session in the same zone.
func referenceTable(t *testing.T) (store.DBTX, []testdb.ReferenceLock) {
	t.Helper()
	_, dsn := testdb.ReferencePool(t)
	db := testdb.Pool(t, testdb.WithParam(dsn, "timezone", "Asia/Seoul"))
	now := testdb.DBNow(t, db)
	at := func(d time.Duration) time.Time { return now.Add(d).Truncate(time.Microsecond) }
	locks := []testdb.ReferenceLock{
		{Key: "orders:1", Owner: "app-1:thread-7", Token: 1764700000500, ExpiresAt: at(25 * time.Second)},
		{Key: "orders:2", Owner: "app-2:thread-3", Token: 1764700000900, ExpiresAt: at(10 * time.Minute)},
		{Key: "report:nightly", Owner: "app-1:thread-9", Token: 1764700000100, ExpiresAt: at(-time.Minute)},
		{Key: "Users:42", Owner: "app-3:main", Token: 1764700000700, ExpiresAt: at(3 * time.Second)},
	}
	testdb.InsertReference(t, db, time.FixedZone("Asia/Seoul", 9*3600), locks...)
	return db, locks
}

// ls on the reference's table: every row with its owner, token, expiry
// instant and the time left on the database's clock.
func TestListReferenceShowsOwnersTokensAndRemaining(t *testing.T) {
	t.Parallel()
	db, reference := referenceTable(t)
	got, err := lockview.ListReference(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]testdb.ReferenceLock{}
	for _, l := range reference {
		byKey[l.Key] = l
	}
	if len(got) != len(reference) {
		t.Fatalf("ListReference: %d rows; want %d", len(got), len(reference))
	}
	var order []string
	if err := db.QueryRow(context.Background(), `SELECT array_agg(lock_key::text ORDER BY lock_key) FROM distributed_lock`).Scan(&order); err != nil {
		t.Fatal(err)
	}
	for i, l := range got {
		w := byKey[l.Key]
		if l.Key != order[i] || l.Owner != w.Owner || l.Token != w.Token || !l.ExpiresAt.Equal(w.ExpiresAt) {
			t.Errorf("row %d = %q %q %d %s; want %q %q %d %s", i, l.Key, l.Owner, l.Token, l.ExpiresAt.UTC(),
				order[i], w.Owner, w.Token, w.ExpiresAt.UTC())
		}
		if l.Remaining != l.ExpiresAt.Sub(l.DBNow) {
			t.Errorf("%s: remaining %s; want expires_at minus the database's now, %s", l.Key, l.Remaining, l.ExpiresAt.Sub(l.DBNow))
		}
		wantState := lockdb.StateHeld
		if w.ExpiresAt.Before(l.DBNow) {
			wantState = lockdb.StateExpired
		}
		if l.State() != wantState {
			t.Errorf("%s is %s; want %s", l.Key, l.State(), wantState)
		}
	}
	orders, err := lockview.ListReference(context.Background(), db, "orders:")
	if err != nil || len(orders) != 2 || orders[0].Key != "orders:1" || orders[1].Key != "orders:2" {
		t.Errorf("ListReference with prefix orders: = %+v, %v; want orders:1 and orders:2", orders, err)
	}
}

// The console's page on the reference's table: orders, filter, window
// around the selection and totals, marked as a reference table.
func TestListReferenceLocksWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := referenceTable(t)
	keys := func(p lockview.Page) []string {
		var k []string
		for _, r := range p.Rows {
			k = append(k, r.Key)
		}
		return k
	}
	cases := []struct {
		name   string
		q      lockview.ListQuery
		want   []string
		anchor int
	}{
		{"by TTL", lockview.ListQuery{Sort: lockview.SortTTL, Before: 5, After: 5},
			[]string{"report:nightly", "Users:42", "orders:1", "orders:2"}, 0},
		{"by token, around a key", lockview.ListQuery{Sort: lockview.SortToken, Anchor: "Users:42", Before: 1, After: 2},
			[]string{"orders:2", "Users:42", "orders:1"}, 1},
		{"filtered by owner, last row", lockview.ListQuery{Sort: lockview.SortKey, Filter: "APP-1", Rank: -1, Before: 3, After: 1},
			[]string{"orders:1", "report:nightly"}, 1},
	}
	for _, c := range cases {
		p, err := lockview.ListReferenceLocks(ctx, db, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(keys(p), c.want) || p.Anchor != c.anchor || !p.Reference {
			t.Errorf("%s: rows %q anchor %d reference %v; want %q anchor %d, reference", c.name, keys(p), p.Anchor, p.Reference, c.want, c.anchor)
		}
		if p.Totals.All != 4 || p.Totals.Held != 3 || p.Totals.Expired != 1 || p.ServerVersion == "" {
			t.Errorf("%s: totals %+v, server %q; want 4 locks, 3 held, 1 expired", c.name, p.Totals, p.ServerVersion)
		}
	}
}
