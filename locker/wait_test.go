package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/workload"
	"github.com/lockctl/lockctl/locker"
)

// TestAcquireWakesOnRelease measures latency, so it is not parallel: it runs
// alone, before the parallel tests start. The others wait on a fake clock.

// startNotifier runs a Notifier on pool's server until the test ends and
// returns once it is listening.
func startNotifier(t *testing.T, pool *pgxpool.Pool) *locker.Notifier {
	t.Helper()
	return workload.StartNotifier(t, pool.Config().ConnConfig)
}

const waiterRowsSQL = `SELECT count(*) FROM distributed_lock_waiter WHERE lock_key = $1`

func waiterRows(t *testing.T, db locker.DBTX, key string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), waiterRowsSQL, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAcquireWakesOnRelease(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	n := startNotifier(t, db)
	// WaitRecheck is long, so only the NOTIFY can explain a quick wake-up.
	// LogGrants: the release's event gives its time on the database clock.
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: n, WaitRecheck: 30 * time.Second, LogGrants: true})
	holder := testdb.MustAcquire(t, lk, db, "k", "a")

	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got := testdb.AcquireAsync(waitCtx, lk, db, "k", "b")
	if w := testdb.WaitForWaiter(t, db, "k", "b"); w.Key != "k" || w.Waited < 0 {
		t.Fatalf("waiter record = %+v", w)
	}
	if _, err := testdb.One(lk.Release(ctx, db, holder)); err != nil {
		t.Fatal(err)
	}
	releasedAt := time.Now()
	r := <-got
	if r.Err != nil || r.Lease.Owner != "b" || r.Lease.Outcome != locker.Acquired || r.Lease.Token <= holder.Token {
		t.Fatalf("waiter got %+v, %v; want acquired by b with a token above %d", r.Lease, r.Err, holder.Token)
	}
	// On the database clock: the release (its event) and the new grant,
	// handed off in the release's transaction.
	var releasedAtDB, grantedAtDB time.Time
	if err := db.QueryRow(ctx, `SELECT occurred_at FROM distributed_lock_event
		WHERE lock_key = 'k' AND kind = 'released' AND fence_token = $1`, holder.Token).Scan(&releasedAtDB); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT acquired_at FROM distributed_lock WHERE lock_key = 'k'`).Scan(&grantedAtDB); err != nil {
		t.Fatal(err)
	}
	lag := grantedAtDB.Sub(releasedAtDB)
	if lag < 0 || lag > 100*time.Millisecond {
		t.Fatalf("waiter was granted the lock %s after the release; want within 100ms", lag)
	}
	t.Logf("granted %s after the release (database clock); Acquire returned %s after Release did", lag, r.At.Sub(releasedAt))
	if n := waiterRows(t, db, "k"); n != 0 {
		t.Fatalf("%d waiter rows left after the grant", n)
	}
	if ev := eventsOf(t, db, "k")[0]; ev.Kind != lockdb.EventAcquired || ev.Detail["waited_ms"] == nil {
		t.Fatalf("grant event = %+v; want acquired with waited_ms", ev)
	}
}

// Without a Notifier, a waiter sleeps until the holder's expiry (read from
// the database) plus a little jitter, and takes the key then. On a fake
// clock: the test reads how long the waiter chose to sleep, lets the lease
// run out on the database clock, and moves the fake clock on as far.
func TestAcquireWakesAtExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	// A WaitRecheck far beyond the TTL: only the holder's expiry can
	// explain a sleep of about the TTL.
	const ttl = time.Minute
	lk := clockedLocker(t, locker.Config{TTL: ttl, WaitRecheck: time.Hour}, clk)
	holder := testdb.MustAcquire(t, lk, db, "k", "a")

	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got := testdb.AcquireAsync(waitCtx, lk, db, "k", "b")
	// First the one early check for a deadlock that raced its enqueue.
	if first := clk.waitTimer(t); first != locker.DeadlockCheck {
		t.Fatalf("waiter's first check after %s; want after DeadlockCheck (%s)", first, locker.DeadlockCheck)
	}
	clk.Advance(locker.DeadlockCheck)
	sleep := clk.waitTimer(t)
	// The holder's time left when the waiter asked, at most the whole TTL,
	// plus at most 50ms of jitter and a millisecond.
	if sleep < ttl-5*time.Second || sleep > ttl+51*time.Millisecond {
		t.Fatalf("waiter sleeps %s; want until the holder's expiry (about %s)", sleep, ttl)
	}
	testdb.ExpireLease(t, db, "k")
	clk.Advance(sleep)
	r := <-got
	if r.Err != nil || r.Lease.Outcome != locker.Stolen || r.Lease.Token <= holder.Token {
		t.Fatalf("waiter got %+v, %v; want stolen with a token above %d", r.Lease, r.Err, holder.Token)
	}
	if ev := eventsOf(t, db, "k")[0]; ev.Kind != lockdb.EventStolen {
		t.Fatalf("latest event = %+v; want the steal", ev)
	}
}

func TestAcquireGivesUpWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: time.Minute}, clk)
	testdb.MustAcquire(t, lk, db, "k", "a")

	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := testdb.AcquireAsync(waitCtx, lk, db, "k", "b")
	clk.waitTimer(t) // registered, and sleeping until a's expiry
	testdb.WaitForWaiter(t, db, "k", "b")
	cancel()
	var r testdb.Acquired
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire still waiting 10s after its context ended")
	}
	if !errors.Is(r.Err, context.Canceled) || !strings.Contains(r.Err.Error(), `"a"`) {
		t.Fatalf("Acquire after its context ended = %v; want Canceled naming holder a", r.Err)
	}
	if n := waiterRows(t, db, "k"); n != 0 {
		t.Fatalf("%d waiter rows left after giving up; want none", n)
	}
	if row := rowOf(t, db, "k"); row.Owner != "a" {
		t.Fatalf("row after the waiter gave up = %+v; want a still holding", row)
	}
}
