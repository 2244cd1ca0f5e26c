package locker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A waiting set whose context ends takes every record out, and a key it was
// first in line for (free, kept for it) goes at once to the waiter behind
// it: nothing of the set is held.
func TestWaitingSetCancelledHoldsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancelAll := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelAll()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	testdb.MustAcquire(t, lk, db, "x", "holder")

	wctx, cancel := context.WithCancel(ctx)
	set := make(chan error, 1)
	go func() {
		_, err := lk.Acquire(wctx, db, locker.Request{Keys: locker.Keys([]string{"x", "y"}...), Owner: "set", Wait: locker.WaitForever})
		set <- err
	}()
	testdb.WaitForWaiter(t, db, "y", "set")
	single := testdb.AcquireAsync(ctx, lk, db, "y", "single")
	testdb.WaitForWaiter(t, db, "y", "single")
	if h := holding(t, db, "y"); h != "" {
		t.Fatalf("y held by %q while the set waits for x; want free, kept for the set", h)
	}
	cancel()
	var gaveUp *locker.Error
	if err := <-set; !errors.As(err, &gaveUp) || !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled set = %v; want a GaveUpError wrapping Canceled", err)
	}
	if r := <-single; r.Err != nil || r.Lease.Key != "y" {
		t.Fatalf("the waiter behind the set = %+v, %v; want y as soon as the set left", r.Lease, r.Err)
	}
	if h := holding(t, db, "x"); h != "holder" {
		t.Errorf("x held by %q; want holder still", h)
	}
	if n := allWaiters(t, db); n != 0 {
		t.Errorf("%d waiter records left; want none", n)
	}
}

// A set's context ends just as its keys are handed to it, over and over:
// whichever comes first, the set ends holding every key (AcquireAll
// returned them) or none (it returned an error), never a part, and leaves
// no waiter record.
func TestWaitingSetCancelledAsItIsHandedItsKeys(t *testing.T) {
	t.Parallel()
	ctx, cancelAll := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelAll()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	got := map[bool]int{}
	for round := range 12 {
		keys := []string{fmt.Sprintf("x%d", round), fmt.Sprintf("y%d", round)}
		held, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(keys...), Owner: "holder"})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		type result struct {
			leases []locker.Lease
			err    error
		}
		set := make(chan result, 1)
		go func() {
			leases, err := lk.Acquire(wctx, db, locker.Request{Keys: locker.Keys(keys...), Owner: "set", Wait: locker.WaitForever})
			set <- result{leases, err}
		}()
		testdb.WaitForWaiter(t, db, keys[1], "set")
		// The release hands the set both keys in its transaction; the
		// cancel lands before it, while it runs, or after it committed
		// (the set may or may not have taken its keys by then).
		switch round % 3 {
		case 0:
			cancel()
		case 1:
			go cancel()
		}
		if err := testdb.ErrOf(lk.Release(ctx, db, held...)); err != nil {
			t.Fatal(err)
		}
		cancel()
		r := <-set
		holders := []string{holding(t, db, keys[0]), holding(t, db, keys[1])}
		if r.err == nil {
			if len(r.leases) != 2 || holders[0] != "set" || holders[1] != "set" {
				t.Fatalf("round %d: AcquireAll returned %v but the keys are held by %v", round, r.leases, holders)
			}
			if err := testdb.ErrOf(lk.Release(ctx, db, r.leases...)); err != nil {
				t.Fatal(err)
			}
		} else if holders[0] == "set" || holders[1] == "set" {
			t.Fatalf("round %d: AcquireAll failed (%v) but the set holds %v", round, r.err, holders)
		}
		got[r.err == nil]++
		if n := allWaiters(t, db); n != 0 {
			t.Fatalf("round %d: %d waiter records left", round, n)
		}
	}
	t.Logf("granted %d times, gave up %d times", got[true], got[false])
}

// The server restarts while a set's enqueue waits for a key's row: the
// transaction is rolled back whole, so after the restart no key of the set
// is held or queued for, and none got a row.
func TestWaitingSetDuringDatabaseRestartHoldsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		testdb.Unavailable(t, "no PostgreSQL to start a private server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg, err := pgxpool.ParseConfig(srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := locker.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	holder := testdb.MustAcquire(t, lk, pool, "m", "holder")
	// A fenced write holds m's row: the set's enqueue, which locks a, then
	// m, then creates z's row, waits there.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // its connection goes back to the pool, broken
	if err := locker.Fence(ctx, tx, holder); err != nil {
		t.Fatal(err)
	}
	set := make(chan error, 1)
	go func() {
		_, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys([]string{"z", "m", "a"}...), Owner: "set", Wait: locker.WaitForever})
		set <- err
	}()
	waitForBlockedCall(t, pool, "distributed_lock_enqueue_all")
	if err := srv.Restart(ctx, pgtemp.Fast); err != nil {
		t.Fatal(err)
	}
	if err := <-set; !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("AcquireAll across the restart = %v; want ErrUnavailable", err)
	}
	testdb.Eventually(t, 20*time.Second, "the pool reconnected", func() bool { return pool.Ping(ctx) == nil })
	for _, k := range []string{"a", "z"} {
		if hasRow(t, pool, k) {
			t.Errorf("%s has a row after the restart; want none (the enqueue was rolled back)", k)
		}
	}
	if h := holding(t, pool, "m"); h != "holder" {
		t.Errorf("m held by %q after the restart; want holder", h)
	}
	if n := allWaiters(t, pool); n != 0 {
		t.Errorf("%d waiter records after the restart; want none", n)
	}
	leases, err := lk.Acquire(ctx, pool, locker.Request{Keys: locker.Keys([]string{"a", "z"}...), Owner: "after"})
	if err != nil || len(leases) != 2 {
		t.Fatalf("the set's free keys after the restart: %v, %v; want both free to take", leases, err)
	}
}
