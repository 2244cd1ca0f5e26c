package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// TryAcquire on the caller's pgx.Tx: the grant commits or rolls back with
// the caller's work, and a refusal leaves the transaction usable.
func TestTryAcquireInCallerTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("rollback leaves no lock", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lease, err := testdb.Try(ctx, lk, tx, "k", "a")
		if err != nil || lease.Outcome != locker.Acquired {
			t.Fatalf("acquire in tx = %+v, %v", lease, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if _, found, err := store.Get[lockdb.LockInfo](ctx, db, "k"); err != nil || found {
			t.Fatalf("after rollback: found=%v err=%v; want no row", found, err)
		}
		if evs := eventsOf(t, db, "k"); len(evs) != 0 {
			t.Fatalf("after rollback: events %+v; want none", evs)
		}
		if other := testdb.MustAcquire(t, lk, db, "k", "b"); other.Outcome != locker.Acquired {
			t.Fatalf("another owner after the rollback = %+v; want acquired", other)
		}
	})

	t.Run("commit holds the lock", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		lk := testdb.Locker(t, locker.Config{TTL: time.Minute, LogGrants: true})
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		lease, err := testdb.Try(ctx, lk, tx, "k", "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := locker.Fence(ctx, tx, lease); err != nil {
			t.Fatalf("fence in the granting transaction: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = testdb.Try(ctx, lk, db, "k", "b")
		var held *locker.Error
		if !errors.As(err, &held) || held.Owner != "a" || held.Token != lease.Token {
			t.Fatalf("acquire by b after commit = %v; want held by a with token %d", err, lease.Token)
		}
		if evs := eventsOf(t, db, "k"); len(evs) != 1 || evs[0].Kind != lockdb.EventAcquired {
			t.Fatalf("events after commit = %+v; want one acquired", evs)
		}
	})

	t.Run("held by another does not abort the transaction", func(t *testing.T) {
		t.Parallel()
		db := testdb.New(t)
		lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
		if _, err := db.Exec(ctx, reportTableSQL); err != nil {
			t.Fatal(err)
		}
		testdb.MustAcquire(t, lk, db, "k", "b")
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := testdb.Try(ctx, lk, tx, "k", "a"); !errors.Is(err, locker.ErrHeld) {
			t.Fatalf("acquire of b's key in tx = %v; want ErrHeld", err)
		}
		if _, err := tx.Exec(ctx, reportWriteSQL, "other", 0, "a"); err != nil {
			t.Fatalf("the transaction is unusable after a refused grant: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("commit after a refused grant: %v", err)
		}
		if got := reportWriters(t, db); len(got) != 1 || got[0] != "a" {
			t.Fatalf("committed work = %v; want a's row", got)
		}
	})
}
