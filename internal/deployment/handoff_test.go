package deployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// handOff has holder take key as owner "a", starts waiter waiting for it as
// "b", and once b's waiter row shows it is waiting, releases a's lease. It
// returns what b's Acquire returned; which wake-up ended the wait (a NOTIFY or
// a recheck) is up to waiter's Config.
func handOff(t *testing.T, holder, waiter *locker.Locker, db locker.DBTX, key string) testdb.Acquired {
	t.Helper()
	ctx := context.Background()
	lease := testdb.MustAcquire(t, holder, db, key, "a")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := testdb.AcquireAsync(wctx, waiter, db, key, "b")
	testdb.WaitForWaiter(t, db, key, "b")
	if _, err := testdb.One(holder.Release(ctx, db, lease)); err != nil {
		t.Fatal(err)
	}
	return <-got
}
