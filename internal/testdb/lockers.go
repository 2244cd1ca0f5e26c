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

// MustAcquire takes key for owner without waiting, or fails the test.
func MustAcquire(t testing.TB, lk *locker.Locker, db locker.DBTX, key, owner string) locker.Lease {
	t.Helper()
	lease, err := lk.TryAcquire(context.Background(), db, key, owner)
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
		l, err := lk.Acquire(ctx, db, key, owner)
		ch <- Acquired{Lease: l, Err: err, At: time.Now()}
	}()
	return ch
}
