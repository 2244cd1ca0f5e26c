package locker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A service branches on database errors through locker alone.
func TestDatabaseErrorsAreLockers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.EmptyDSN(t))
	lk := testdb.Locker(t, locker.Config{})
	_, err := testdb.Try(ctx, lk, db, "k", "a")
	if !errors.Is(err, locker.ErrNotMigrated) {
		t.Fatalf("TryAcquire on an unmigrated database: %v; want locker.ErrNotMigrated", err)
	}
}
