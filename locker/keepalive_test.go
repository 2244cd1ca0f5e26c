package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// The keepalive tests measure how fast a lost lease is noticed, so they are
// not parallel.

// warm opens a pool connection before a lease is taken: a lease's trust
// window starts before its statement waits for a connection, and a first
// connection on a busy machine can take most of a short TTL.
func warm(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if err := pool.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func waitDone(t *testing.T, ctx context.Context, limit time.Duration) time.Time {
	t.Helper()
	select {
	case <-ctx.Done():
		return time.Now()
	case <-time.After(limit):
		t.Fatalf("keepalive context still alive after %s", limit)
		return time.Time{}
	}
}

func TestKeepaliveHoldsPastTTL(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	lk := newLocker(t, locker.Config{TTL: 500 * time.Millisecond})
	warm(t, db)
	lease := mustAcquire(t, lk, db, "k", "a")
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()

	time.Sleep(1600 * time.Millisecond) // more than three TTLs
	if err := k.Err(); err != nil || k.Context().Err() != nil {
		t.Fatalf("keepalive ended: %v", err)
	}
	if _, err := lk.TryAcquire(ctx, db, "k", "b"); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("acquire by b during keepalive = %v; want ErrHeld", err)
	}
	kept := k.Lease()
	row := rowOf(t, db, "k")
	if kept.Token != lease.Token || row.Token != lease.Token || row.RenewCount < 2 || kept.ValidFor() <= 0 {
		t.Fatalf("kept lease %+v, row %+v; want token %d renewed at least twice and still valid", kept, row, lease.Token)
	}
	k.Stop()
	if k.Context().Err() == nil || errors.Is(k.Err(), locker.ErrLeaseLost) {
		t.Fatalf("after Stop: ctx err %v, cause %v; want cancelled, not lost", k.Context().Err(), k.Err())
	}
	// Stop does not release: the holder releases with the kept lease.
	if _, err := lk.Release(ctx, db, k.Lease()); err != nil {
		t.Fatalf("release after Stop: %v", err)
	}
}

func TestKeepaliveEndsOnForceExpire(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	const ttl, every = 900 * time.Millisecond, 300 * time.Millisecond
	lk := newLocker(t, locker.Config{TTL: ttl, RenewEvery: every})
	operator := newLocker(t, locker.Config{Actor: "ops"})
	warm(t, db)
	lease := mustAcquire(t, lk, db, "k", "a")
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()

	time.Sleep(400 * time.Millisecond)
	if _, err := operator.ForceExpire(ctx, db, "k", lease.Token); err != nil {
		t.Fatal(err)
	}
	expiredAt := time.Now()
	ended := waitDone(t, k.Context(), 5*time.Second)
	if lag := ended.Sub(expiredAt); lag > every+200*time.Millisecond {
		t.Fatalf("keepalive noticed the force-expire after %s; want within about one renew interval (%s)", lag, every)
	}
	cause := context.Cause(k.Context())
	if !errors.Is(cause, locker.ErrLeaseLost) || !errors.Is(cause, locker.ErrNotHeld) || !errors.Is(k.Err(), locker.ErrLeaseLost) {
		t.Fatalf("cause = %v; want ErrLeaseLost (and ErrNotHeld)", cause)
	}
}

// With the database gone, the keepalive cannot prove the lease and must end
// its context within the trust window — TTL − SafetyMargin after the last
// successful renewal was sent — and so before the lease's expiry; but not at
// the first failed renewal.
func TestKeepaliveEndsWhenDatabaseIsGone(t *testing.T) {
	ctx := context.Background()
	srv, err := pgtemp.Start(ctx, pgtemp.Options{Fast: true, HandleSignals: true})
	if err != nil {
		testdb.Unavailable(t, "no PostgreSQL to start a private server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	pool, err := pgxpool.New(ctx, srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := locker.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}

	const ttl, margin, every = time.Second, 200 * time.Millisecond, 250 * time.Millisecond
	lk := newLocker(t, locker.Config{TTL: ttl, SafetyMargin: margin, RenewEvery: every})
	lease := mustAcquire(t, lk, pool, "k", "a")
	k := lk.Keepalive(ctx, pool, lease)
	defer k.Stop()
	time.Sleep(600 * time.Millisecond) // a couple of renewals

	stopStarted := time.Now()
	if err := srv.Stop(pgtemp.Fast); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	ended := waitDone(t, k.Context(), 5*time.Second)
	left := k.Lease().ValidFor() // what remained of the last renewed lease when it ended

	if !errors.Is(k.Err(), locker.ErrLeaseLost) || !strings.Contains(k.Err().Error(), "could not be renewed") {
		t.Fatalf("cause = %v; want ErrLeaseLost: could not be renewed", k.Err())
	}
	// The last successful renewal was sent before the server stopped.
	if latest := stopped.Add(ttl - margin + 100*time.Millisecond); ended.After(latest) {
		t.Fatalf("keepalive ended %s after the server stopped; want within TTL−margin (%s)", ended.Sub(stopped), ttl-margin)
	}
	if left <= 0 {
		t.Fatalf("keepalive ended after the lease could have expired (valid for %s)", left)
	}
	// It was renewed at most one interval (plus a round trip) before the stop,
	// so its window lasted at least TTL − margin − interval after it.
	if earliest := stopStarted.Add(ttl - margin - every - 150*time.Millisecond); ended.Before(earliest) {
		t.Fatalf("keepalive gave up %s after the stop; it should trust the lease until its window ends", ended.Sub(stopStarted))
	}
	t.Logf("ended %s after the stop, %s before the lease's earliest possible expiry", ended.Sub(stopStarted), left)
}

// A Keepalive started late — most of the way through the lease's first
// renew interval — renews at once rather than waiting a full interval from
// its start, which would pass the trust window without trying.
func TestKeepaliveStartedLateStillRenews(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	lk := newLocker(t, locker.Config{TTL: 600 * time.Millisecond}) // renews every 200ms, trusts 540ms
	warm(t, db)
	lease := mustAcquire(t, lk, db, "k", "a")
	time.Sleep(380 * time.Millisecond)
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()
	time.Sleep(700 * time.Millisecond)
	if err := k.Err(); err != nil {
		t.Fatalf("keepalive started late lost a lease it could have renewed: %v", err)
	}
}

// RenewEvery longer than the trust window (TTL − SafetyMargin) cannot keep
// a lease; the Keepalive renews within the window instead.
func TestKeepaliveRenewEveryLongerThanWindow(t *testing.T) {
	ctx := context.Background()
	db := testdb.New(t)
	lk := newLocker(t, locker.Config{TTL: 600 * time.Millisecond, RenewEvery: 590 * time.Millisecond})
	warm(t, db)
	lease := mustAcquire(t, lk, db, "k", "a")
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()
	time.Sleep(1200 * time.Millisecond)
	if err := k.Err(); err != nil {
		t.Fatalf("keepalive with RenewEvery 590ms on a 600ms TTL: %v", err)
	}
}
