package deployment_test

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/locker"
)

func newLocker(t *testing.T, cfg locker.Config) *locker.Locker {
	t.Helper()
	lk, err := locker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// mustAcquire takes key for owner without waiting, or fails the test.
func mustAcquire(t *testing.T, lk *locker.Locker, db locker.DBTX, key, owner string) locker.Lease {
	t.Helper()
	lease, err := lk.TryAcquire(context.Background(), db, key, owner)
	if err != nil {
		t.Fatalf("acquire %q as %q: %v", key, owner, err)
	}
	return lease
}

type acquired struct {
	lease locker.Lease
	err   error
}

// acquireAsync waits for key in the background.
func acquireAsync(ctx context.Context, lk *locker.Locker, db locker.DBTX, key, owner string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := lk.Acquire(ctx, db, key, owner)
		ch <- acquired{l, err}
	}()
	return ch
}
