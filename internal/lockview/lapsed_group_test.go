package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// A shared key whose holders' leases all ran out is expired to every
// reader, as ls shows its row: the console's header counts and the
// metrics gauges count it expired, not held (#39 bug 1).
func TestALapsedGroupIsExpiredToEveryReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, owner := range []string{"r1", "r2"} {
		p := store.GrantParams{Key: "s", Owner: owner, TTL: time.Second, Actor: owner}
		if g, found, err := store.TryGrantShared(ctx, db, p, 0); err != nil || !found || g.Outcome != "acquired" {
			t.Fatalf("shared grant to %s: %+v, %v, %v", owner, g, found, err)
		}
	}
	testdb.Clock(t, db).Advance(2 * time.Second)

	l, found, err := lockview.Get(ctx, db, "s")
	if err != nil || !found || l.State() != lockdb.StateExpired {
		t.Fatalf("s read as %s (%v, %v); want expired", l.State(), found, err)
	}
	page, err := lockview.ListLocks(ctx, db, lockview.ListQuery{Sort: lockview.SortKey, After: 10})
	if err != nil {
		t.Fatal(err)
	}
	if tot := page.Totals; tot.Held != 0 || tot.Expiring != 0 || tot.Expired != 1 {
		t.Errorf("console header: %d held, %d expiring, %d expired; want 0, 0, 1", tot.Held, tot.Expiring, tot.Expired)
	}
	g, err := lockview.ReadGauges(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if g.Held != 0 || g.Expiring != 0 || g.Expired != 1 || g.OldestHeld != 0 {
		t.Errorf("gauges: %d held, %d expiring, %d expired, oldest held %s; want 0, 0, 1, 0",
			g.Held, g.Expiring, g.Expired, g.OldestHeld)
	}
}
