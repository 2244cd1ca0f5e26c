package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

func TestGetFollowsTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Metadata: map[string]any{"job": "nightly"}})

	if _, found, err := lk.Get(ctx, db, "k"); err != nil || found {
		t.Fatalf("Get of a never-granted key = found %v, %v; want not found", found, err)
	}
	lease, err := lk.TryAcquire(ctx, db, "k", "a")
	if err != nil {
		t.Fatal(err)
	}
	info, found, err := lk.Get(ctx, db, "k")
	if err != nil || !found {
		t.Fatalf("Get after acquire = found %v, %v", found, err)
	}
	if info.Owner != "a" || info.Token != lease.Token || info.State() != locker.StateHeld ||
		info.TTL != time.Minute || info.Remaining <= 0 || info.Metadata["job"] != "nightly" {
		t.Fatalf("Get after acquire = %+v; want a's held lease %d with its metadata", info, lease.Token)
	}
	if _, err := lk.Release(ctx, db, lease); err != nil {
		t.Fatal(err)
	}
	info, _, err = lk.Get(ctx, db, "k")
	if err != nil || info.State() != locker.StateFree || info.ReleasedAt == nil || info.Owner != "a" {
		t.Fatalf("Get after release = %+v, %v; want free, a as last holder", info, err)
	}
	if _, _, err := lk.Get(ctx, db, ""); !errors.Is(err, locker.ErrInvalidKey) {
		t.Fatalf("Get of an empty key: %v; want ErrInvalidKey", err)
	}
}

// A service branches on database errors through locker alone.
func TestDatabaseErrorsAreLockers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.EmptyDSN(t))
	lk := testdb.Locker(t, locker.Config{})
	_, err := lk.TryAcquire(ctx, db, "k", "a")
	if !errors.Is(err, locker.ErrNotMigrated) {
		t.Fatalf("TryAcquire on an unmigrated database: %v; want locker.ErrNotMigrated", err)
	}
}
