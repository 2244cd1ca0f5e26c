package locker_test

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// A service migrates with the schema embedded in the library: on an empty
// database, and again (idempotent) on a migrated one.
func TestMigrateMakesAnEmptyDatabaseUsable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.EmptyDSN(t))
	lk := testdb.Locker(t, locker.Config{})
	for range 2 {
		if err := locker.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testdb.Try(ctx, lk, db, "k", "a"); err != nil {
		t.Fatalf("TryAcquire after Migrate: %v", err)
	}
}
