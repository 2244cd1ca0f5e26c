package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

func TestPruneKeepsTokensGrowing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	first := testdb.MustAcquire(t, lk, db, "k", "a")
	if _, err := lk.Release(ctx, db, first); err != nil {
		t.Fatal(err)
	}
	testdb.MustAcquire(t, lk, db, "expired", "a") // expires, never released
	testdb.ExpireLease(t, db, "expired")
	held := testdb.MustAcquire(t, lk, db, "held", "a")
	// Free for a second: the released row by then, the expired one since.
	testdb.AgeLock(t, db, "k", time.Second)
	testdb.AgeLock(t, db, "expired", time.Second)

	res, err := lk.Prune(ctx, db, locker.PruneOptions{FreeFor: time.Second / 2})
	if err != nil || res.Locks != 2 {
		t.Fatalf("prune = %+v, %v; want the released and the expired row deleted", res, err)
	}
	for _, key := range []string{"k", "expired"} {
		if _, found, _ := store.Get[locker.LockInfo](ctx, db, key); found {
			t.Fatalf("%q still has a row after prune", key)
		}
	}
	if row := rowOf(t, db, "held"); row.Token != held.Token {
		t.Fatalf("prune touched a held lock: %+v", row)
	}
	next := testdb.MustAcquire(t, lk, db, "k", "b")
	if next.Outcome != locker.Acquired || next.Token <= first.Token {
		t.Fatalf("acquire after prune = %+v; want acquired with a token above %d", next, first.Token)
	}
}

// A grant inside an open caller transaction holds the prune gate: prune
// gives up after GateWait with ErrLockTimeout and deletes nothing.
func TestPruneTimesOutBehindAnOpenGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	free := testdb.MustAcquire(t, lk, db, "free", "a")
	if _, err := lk.Release(ctx, db, free); err != nil {
		t.Fatal(err)
	}
	testdb.AgeLock(t, db, "free", time.Second)

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := lk.TryAcquire(ctx, tx, "busy", "x"); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	res, err := lk.Prune(ctx, db, locker.PruneOptions{FreeFor: time.Millisecond, GateWait: 200 * time.Millisecond})
	if !errors.Is(err, locker.ErrLockTimeout) {
		t.Fatalf("prune behind an open grant = %+v, %v; want ErrLockTimeout", res, err)
	}
	if waited := time.Since(started); waited < 150*time.Millisecond {
		t.Fatalf("prune gave up after %s; want it to wait about GateWait (200ms)", waited)
	}
	if _, found, _ := store.Get[locker.LockInfo](ctx, db, "free"); !found {
		t.Fatal("a timed-out prune deleted a row")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := lk.Prune(ctx, db, locker.PruneOptions{FreeFor: time.Millisecond}); err != nil || res.Locks != 1 {
		t.Fatalf("prune after the transaction ended = %+v, %v; want 1 row", res, err)
	}
	if _, err := lk.Prune(ctx, db, locker.PruneOptions{FreeFor: -time.Second}); err == nil {
		t.Fatal("prune with a negative FreeFor succeeded")
	}
}
