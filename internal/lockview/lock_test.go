package lockview_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// Get reads what a service sees of a row (the same LockInfo locker.Get
// reads) and how its grant came about: a steal names the lease it ended.
func TestGetStolenRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	first := testdb.MustAcquire(t, lk, pool, "k", "a")
	testdb.ExpireLease(t, pool, "k")
	second := testdb.MustAcquire(t, lk, pool, "k", "b")

	l, found, err := lockview.Get(ctx, pool, "k")
	if err != nil || !found {
		t.Fatalf("Get: found=%v err=%v", found, err)
	}
	info, _, err := store.Get[lockdb.LockInfo](ctx, pool, "k")
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner != "b" || l.Token != second.Token || l.State() != lockdb.StateHeld || l.TTL != info.TTL || l.ExpiresAt != info.ExpiresAt {
		t.Errorf("Get = %+v; want b's lease %+v", l.LockInfo, info)
	}
	if l.GrantKind != "stolen" || l.PreviousOwner == nil || *l.PreviousOwner != "a" ||
		l.PreviousToken == nil || *l.PreviousToken != first.Token || l.HeldFor < 0 || l.HeldFor > time.Minute {
		t.Errorf("grant: kind %q, previous %v/%v, held for %s; want stolen from a's token %d",
			l.GrantKind, l.PreviousOwner, l.PreviousToken, l.HeldFor, first.Token)
	}
	if _, found, err := lockview.Get(ctx, pool, "none"); err != nil || found {
		t.Errorf("Get of a key with no row: found=%v err=%v", found, err)
	}
}
