package locker_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// Without a Notifier, at the defaults (a check every 5 s, WaitRecheck,
// longer than the 2 s claim window), a waiter handed the key or a permit
// between two of its checks still finds the grant at its next check: its
// record asks for a claim window that outlasts its checks.
func TestPollingWaiterAtTheDefaultsKeepsItsGrant(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	for _, kind := range []string{"mutex", "permit"} {
		t.Run(kind, func(t *testing.T) {
			key := "k-" + kind
			take := func(owner string) (locker.Lease, error) {
				if kind == "permit" {
					return testdb.One(lk.Acquire(ctx, db, locker.Request{Keys: []locker.Key{{Name: key, Mode: locker.ModeSemaphore, Permits: 1}}, Owner: owner, Wait: locker.WaitForever}))
				}
				return testdb.Wait(ctx, lk, db, key, owner)
			}
			holder, err := take("a")
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan testdb.Acquired, 1)
			go func() {
				l, err := take("b")
				got <- testdb.Acquired{Lease: l, Err: err}
			}()
			testdb.WaitForWaiter(t, db, key, "b")
			time.Sleep(locker.DeadlockCheck + 200*time.Millisecond) // past its one early check
			if _, err := testdb.One(lk.Release(ctx, db, holder)); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.Err != nil || r.Lease.Owner != "b" {
				t.Fatalf("the waiter after the release = %+v, %v; want the key or permit handed to it", r.Lease, r.Err)
			}
		})
	}
}
