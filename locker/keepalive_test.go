package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// The keepalive tests run on a fake clock (fakeclock_test.go): the test
// sees how long the Keepalive chose to sleep, moves the clock on by that
// much, and moves the lease's row on the database clock by as much
// (testdb.AgeLock), so a lease of 30s lives through minutes in
// milliseconds, and what the Keepalive does at each step is exact.

// Default timing for a 30s TTL: renew every 10s, trust a lease for 27s
// after the send time of its last grant or renewal.
const (
	kaTTL   = 30 * time.Second
	kaEvery = 10 * time.Second
	kaTrust = 27 * time.Second
)

func waitDone(t *testing.T, ctx context.Context, limit time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(limit):
		t.Fatalf("keepalive context still alive after %s", limit)
	}
}

// liveRow is key's row with its state on the database clock.
func liveRow(t *testing.T, db locker.DBTX, key string) lockdb.LockInfo {
	t.Helper()
	row, found, err := store.Get[lockdb.LockInfo](context.Background(), db, key)
	if err != nil || !found {
		t.Fatalf("read %q: found=%v err=%v", key, found, err)
	}
	return row
}

// passRenewInterval lets one renew interval pass on both clocks and
// returns once the Keepalive has renewed and sleeps again.
func passRenewInterval(t *testing.T, clk *fakeClock, db locker.DBTX, key string) {
	t.Helper()
	d := clk.waitTimer(t)
	if d != kaEvery {
		t.Fatalf("keepalive sleeps %s before renewing; want the renew interval %s", d, kaEvery)
	}
	testdb.AgeLock(t, db, key, d)
	clk.Advance(d)
	clk.waitTimer(t)
}

func TestKeepaliveHoldsPastTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: kaTTL}, clk)
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()

	// Four intervals: the lease would have expired after three.
	for i := 1; i <= 4; i++ {
		passRenewInterval(t, clk, db, "k")
		if row := liveRow(t, db, "k"); int(row.RenewCount) != i || row.State() != lockdb.StateHeld {
			t.Fatalf("after %s: row %+v; want held, renewed %d times", time.Duration(i)*kaEvery, row, i)
		}
	}
	if err := context.Cause(k.Context()); err != nil || k.Context().Err() != nil {
		t.Fatalf("keepalive ended: %v", err)
	}
	if _, err := testdb.Try(ctx, lk, db, "k", "b"); !errors.Is(err, locker.ErrHeld) {
		t.Fatalf("acquire by b during keepalive = %v; want ErrHeld", err)
	}
	kept := k.Leases()[0]
	if row := rowOf(t, db, "k"); kept.Token != lease.Token || row.Token != lease.Token || !kept.ExpiresAt.Equal(row.ExpiresAt) {
		t.Fatalf("kept lease %+v, row %+v; want token %d, as last renewed", kept, row, lease.Token)
	}
	k.Stop()
	if k.Context().Err() == nil || errors.Is(context.Cause(k.Context()), locker.ErrLeaseLost) {
		t.Fatalf("after Stop: ctx err %v, cause %v; want cancelled, not lost", k.Context().Err(), context.Cause(k.Context()))
	}
	// Stop does not release: the holder releases with the kept lease.
	if _, err := testdb.One(lk.Release(ctx, db, k.Leases()[0])); err != nil {
		t.Fatalf("release after Stop: %v", err)
	}
}

// A force-expire is noticed at the next renewal.
func TestKeepaliveEndsOnForceExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: kaTTL}, clk)
	oper := testdb.Operator(t, "ops")
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()

	passRenewInterval(t, clk, db, "k")
	if _, err := oper.ForceExpire(ctx, db, "k", lease.Token); err != nil {
		t.Fatal(err)
	}
	if err := context.Cause(k.Context()); err != nil {
		t.Fatalf("keepalive ended before it tried to renew: %v", err)
	}
	if d := clk.waitTimer(t); d != kaEvery {
		t.Fatalf("keepalive sleeps %s; want the renew interval %s", d, kaEvery)
	}
	clk.Advance(kaEvery)
	waitDone(t, k.Context(), 10*time.Second)
	cause := context.Cause(k.Context())
	if !errors.Is(cause, locker.ErrLeaseLost) || !errors.Is(cause, locker.ErrNotHeld) || !errors.Is(context.Cause(k.Context()), locker.ErrLeaseLost) {
		t.Fatalf("cause = %v; want ErrLeaseLost (and ErrNotHeld)", cause)
	}
}

// With the database gone, the keepalive cannot prove the lease: it keeps
// retrying, and ends its context exactly when the trust window — TTL −
// SafetyMargin after the last successful renewal was sent — has passed, so
// before the lease's expiry; not at the first failed renewal.
func TestKeepaliveEndsWhenDatabaseIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, pool := privateServer(t)

	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: kaTTL}, clk)
	lease := testdb.MustAcquire(t, lk, pool, "k", "a")
	k := lk.Keepalive(ctx, pool, lease)
	defer k.Stop()
	passRenewInterval(t, clk, pool, "k")
	lastRenewal := clk.Now() // when the one successful renewal was sent
	if row := rowOf(t, pool, "k"); row.RenewCount != 1 {
		t.Fatalf("row %+v; want renewed once before the server stops", row)
	}
	if err := srv.Stop(pgtemp.Fast); err != nil {
		t.Fatal(err)
	}

	failed := 0
	for {
		d, ended := clk.waitTimerOrEnd(t, k.Context())
		if ended {
			break
		}
		if clk.Now().Sub(lastRenewal) > kaTTL {
			t.Fatalf("keepalive still trusts the lease %s after its last renewal; the lease (TTL %s) may be gone", clk.Now().Sub(lastRenewal), kaTTL)
		}
		clk.Advance(d)
		failed++
	}
	if !errors.Is(context.Cause(k.Context()), locker.ErrLeaseLost) || !strings.Contains(context.Cause(k.Context()).Error(), "could not be renewed") {
		t.Fatalf("cause = %v; want ErrLeaseLost: could not be renewed", context.Cause(k.Context()))
	}
	if trusted := clk.Now().Sub(lastRenewal); trusted != kaTrust {
		t.Fatalf("keepalive gave up %s after the last renewal was sent; want exactly the trust window %s", trusted, kaTrust)
	}
	if lost := (*locker.Error)(nil); !errors.As(context.Cause(k.Context()), &lost) || !lost.At.Equal(lastRenewal.Add(kaTrust)) {
		t.Fatalf("cause %#v; want a LeaseLostError stamped with the end of the trust window %s", context.Cause(k.Context()), lastRenewal.Add(kaTrust))
	}
	if failed < 3 {
		t.Fatalf("keepalive woke %d times before it gave up; want it to keep retrying through the window", failed)
	}
	t.Logf("gave up after %d wake-ups, %s after the last renewal", failed, kaTrust)
}

// A renewal that hangs (its row locked by another transaction, here) ends
// the lease when the trust window ends, while the renewal is still out:
// not when the aborted call comes back, which on a busy server may be
// after the lease's expiry.
func TestKeepaliveEndsWhileARenewalHangs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: 2 * time.Second, RenewEvery: 500 * time.Millisecond, SafetyMargin: 500 * time.Millisecond})
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT FROM distributed_lock WHERE lock_key = 'k' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()
	waitDone(t, k.Context(), 5*time.Second)
	lost := (*locker.Error)(nil)
	if !errors.As(context.Cause(k.Context()), &lost) || !strings.Contains(lost.Reason, "still out") {
		t.Fatalf("cause %v; want a LeaseLostError: the renewal was still out when the trust window ended", context.Cause(k.Context()))
	}
	if !lost.At.Before(lease.ExpiresAt) {
		t.Errorf("lost at %v; want before the lease's expiry %v", lost.At, lease.ExpiresAt)
	}
}

// A Keepalive started late — most of the way through the lease's trust
// window — renews at once rather than waiting a full interval from its
// start, which would pass the trust window without trying.
func TestKeepaliveStartedLateStillRenews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: kaTTL}, clk)
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	const late = 25 * time.Second // of a 27s trust window
	testdb.AgeLock(t, db, "k", late)
	clk.Advance(late)
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()

	// No clock moves here: only a renewal at once can pass this.
	testdb.Eventually(t, 10*time.Second, "a renewal by the late keepalive", func() bool {
		return rowOf(t, db, "k").RenewCount == 1
	})
	if d := clk.waitTimer(t); d != kaEvery {
		t.Fatalf("after the renewal the keepalive sleeps %s; want the renew interval %s", d, kaEvery)
	}
	if err := context.Cause(k.Context()); err != nil {
		t.Fatalf("keepalive started late lost a lease it could have renewed: %v", err)
	}
}

// A Keepalive given a lease already past its trust window (its grant
// waited long for the row, say) returns with its Context already ended:
// the holder must not start work under it, and no goroutine's first look
// may come after the lease's expiry on a busy machine.
func TestKeepaliveOfALeasePastItsTrustWindowEndsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: kaTTL}, clk)
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	clk.Advance(kaTrust)
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()
	if k.Context().Err() == nil {
		t.Fatal("keepalive of a lease past its trust window returned with a live Context")
	}
	lost := (*locker.Error)(nil)
	if !errors.As(context.Cause(k.Context()), &lost) || !strings.Contains(lost.Reason, "trust window had already passed") || !lost.At.Equal(clk.Now()) {
		t.Fatalf("cause %#v; want a LeaseLostError at %s: its trust window had already passed", context.Cause(k.Context()), clk.Now())
	}
	if row := liveRow(t, db, "k"); row.RenewCount != 0 {
		t.Fatalf("row %+v; want no renewal of a lease no longer trusted", row)
	}
}

// RenewEvery longer than the trust window (TTL − SafetyMargin) cannot keep
// a lease; the Keepalive renews at the default interval instead.
func TestKeepaliveRenewEveryLongerThanWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	clk := newFakeClock()
	lk := clockedLocker(t, locker.Config{TTL: kaTTL, RenewEvery: kaTTL - 500*time.Millisecond}, clk)
	lease := testdb.MustAcquire(t, lk, db, "k", "a")
	k := lk.Keepalive(ctx, db, lease)
	defer k.Stop()
	for i := 1; i <= 4; i++ {
		passRenewInterval(t, clk, db, "k")
	}
	if err := context.Cause(k.Context()); err != nil {
		t.Fatalf("keepalive with RenewEvery %s on a %s TTL: %v", kaTTL-500*time.Millisecond, kaTTL, err)
	}
	if row := liveRow(t, db, "k"); row.RenewCount != 4 || row.State() != lockdb.StateHeld {
		t.Fatalf("row %+v; want held, renewed 4 times", row)
	}
}

// A lease named by its key, owner and token (as lockctl's commands name
// one) says nothing of when it was granted: its Keepalive renews it before
// it returns and trusts it from that renewal. With the database gone the
// renewal fails, and the Keepalive must not vouch for a lease that may be
// long gone: its Context has ended when it returns.
func TestKeepaliveOfAnUnprovenLeaseNeedsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, pool := privateServer(t)
	lk := testdb.Locker(t, locker.Config{TTL: kaTTL})
	granted := testdb.MustAcquire(t, lk, pool, "up", "a")
	named := locker.Lease{Key: "up", Owner: "a", Token: granted.Token}

	// With the database up, the first renewal is made before Keepalive
	// returns: the lease it vouches for is one the database just renewed.
	up := lk.Keepalive(ctx, pool, named)
	defer up.Stop()
	if row := rowOf(t, pool, "up"); up.Context().Err() != nil || row.RenewCount != 1 || up.Leases()[0].ValidFor() <= 0 {
		t.Fatalf("Keepalive of a named lease: ended %v, row renewed %d times, valid for %s; want kept, renewed once, valid",
			context.Cause(up.Context()), row.RenewCount, up.Leases()[0].ValidFor())
	}

	gone := testdb.MustAcquire(t, lk, pool, "gone", "a")
	if err := srv.Stop(pgtemp.Fast); err != nil {
		t.Fatal(err)
	}
	k := lk.Keepalive(ctx, pool, locker.Lease{Key: "gone", Owner: "a", Token: gone.Token})
	defer k.Stop()
	if k.Context().Err() == nil {
		t.Fatalf("Keepalive of a named lease with the database gone: Context live, leases %+v; want it ended: nothing proved the lease", k.Leases())
	}
	if !errors.Is(context.Cause(k.Context()), locker.ErrLeaseLost) {
		t.Fatalf("cause = %v; want ErrLeaseLost", context.Cause(k.Context()))
	}
}

// privateServer starts a server of the test's own, which it may stop, with
// a pool on its migrated database.
func privateServer(t *testing.T) (*pgtemp.Instance, *pgxpool.Pool) {
	t.Helper()
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
	return srv, pool
}
