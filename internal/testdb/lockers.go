package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/locker"
)

// Locker makes a Locker from cfg, or fails the test.
func Locker(t testing.TB, cfg locker.Config) *locker.Locker {
	t.Helper()
	lk, err := locker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// Try is one attempt at key for owner (an Acquire of one key, no wait).
func Try(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string) (locker.Lease, error) {
	return One(lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(key), Owner: owner}))
}

// Wait takes key for owner, waiting as long as ctx lasts.
func Wait(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string) (locker.Lease, error) {
	return One(lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(key), Owner: owner, Wait: locker.WaitForever}))
}

// One is the one lease of a call on one key (Acquire, Renew, Release).
func One(leases []locker.Lease, err error) (locker.Lease, error) {
	if err != nil || len(leases) == 0 {
		return locker.Lease{}, err
	}
	return leases[0], nil
}

// MustAcquire takes key for owner without waiting, or fails the test.
func MustAcquire(t testing.TB, lk *locker.Locker, db locker.DBTX, key, owner string) locker.Lease {
	t.Helper()
	lease, err := Try(context.Background(), lk, db, key, owner)
	if err != nil {
		t.Fatalf("acquire %q as %q: %v", key, owner, err)
	}
	return lease
}

// Acquired is what a waiting Acquire returned, and when (on the test's
// clock) it returned.
type Acquired struct {
	Lease locker.Lease
	Err   error
	At    time.Time
}

// AcquireAsync waits for key in the background, so the test can act (release,
// expire, cancel ctx) while the caller waits.
func AcquireAsync(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string) <-chan Acquired {
	ch := make(chan Acquired, 1)
	go func() {
		l, err := Wait(ctx, lk, db, key, owner)
		ch <- Acquired{Lease: l, Err: err, At: time.Now()}
	}()
	return ch
}

// ErrOf is the error of a call whose leases the test does not need.
func ErrOf(_ []locker.Lease, err error) error { return err }

// TryDelayed is Try of a lease that carries the lock-delay delay.
func TryDelayed(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string, delay time.Duration) (locker.Lease, error) {
	return One(lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(key), Owner: owner, LockDelay: delay}))
}

// WaitDelayed is Wait for a lease that carries the lock-delay delay.
func WaitDelayed(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string, delay time.Duration) (locker.Lease, error) {
	return One(lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys(key), Owner: owner, LockDelay: delay, Wait: locker.WaitForever}))
}

// MustDelayed is MustAcquire of a lease that carries the lock-delay delay.
func MustDelayed(t testing.TB, lk *locker.Locker, db locker.DBTX, key, owner string, delay time.Duration) locker.Lease {
	t.Helper()
	lease, err := TryDelayed(context.Background(), lk, db, key, owner, delay)
	if err != nil {
		t.Fatalf("acquire %q as %q: %v", key, owner, err)
	}
	return lease
}
