package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// laterMigration is a migration a later lockctl could ship: it counts how
// often it ran.
func laterMigration() store.Migration {
	return store.Migration{Version: store.LatestVersion() + 1, Name: "later", SQL: `
CREATE TABLE IF NOT EXISTS later_runs (n int);
INSERT INTO later_runs VALUES (1);`}
}

func recorded(t *testing.T, db store.DBTX) []int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT version FROM distributed_lock_migration ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func runs(t *testing.T, db store.DBTX) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM later_runs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A migrated database records every version; a migrate with a new version
// applies only that one, once, however often it runs.
func TestMigrateAppliesEachVersionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if got := recorded(t, db); len(got) != store.LatestVersion() || got[len(got)-1] != store.LatestVersion() {
		t.Fatalf("recorded versions %v; want 1..%d", got, store.LatestVersion())
	}
	later := laterMigration()
	for range 3 {
		if err := store.MigrateThrough(ctx, db, later); err != nil {
			t.Fatal(err)
		}
	}
	if n := runs(t, db); n != 1 {
		t.Errorf("the new migration ran %d times; want once", n)
	}
	if got := recorded(t, db); got[len(got)-1] != later.Version {
		t.Errorf("recorded versions %v; want %d last", got, later.Version)
	}
}

// Migrates started together on a new database (services starting at once)
// apply every migration once: the advisory lock serialises them and each
// re-reads the recorded versions under it.
func TestConcurrentMigratesApplyEachVersionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.EmptyDSN(t))
	later := laterMigration()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = store.MigrateThrough(ctx, db, later) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := runs(t, db); n != 1 {
		t.Errorf("the migration ran %d times under concurrent migrates; want once", n)
	}
}

// A database migrated by a newer lockctl is refused, by Migrate and so by
// every service's start-up, and left as it is: an old binary must not
// re-create older functions over the newer ones.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if err := store.MigrateThrough(ctx, db, laterMigration()); err != nil {
		t.Fatal(err)
	}
	before := catalogText(t, db)
	err := store.Migrate(ctx, db)
	if meaning, _ := store.Meaning(err); !errors.Is(err, locker.ErrSchemaNewer) || meaning != locker.ErrSchemaNewer {
		t.Fatalf("migrate of a newer schema: %v; want ErrSchemaNewer", err)
	}
	if after := catalogText(t, db); after != before {
		t.Fatal("a refused migrate changed the schema")
	}
	s, err := store.Status(ctx, db)
	if err != nil || !s.Newer() || s.Applied != store.LatestVersion()+1 || len(s.Pending) != 0 {
		t.Fatalf("status of a newer schema = %+v, %v; want newer, applied %d", s, err, store.LatestVersion()+1)
	}
}

func TestMigrationStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := testdb.Pool(t, testdb.EmptyDSN(t))
	s, err := store.Status(ctx, empty)
	if err != nil || s.Applied != 0 || s.Available != store.LatestVersion() || len(s.Pending) != store.LatestVersion() || s.Adopts {
		t.Fatalf("status of a new database = %+v, %v; want every migration pending", s, err)
	}
	db := testdb.New(t)
	if s, err := store.Status(ctx, db); err != nil || s.Applied != store.LatestVersion() || len(s.Pending) != 0 || s.Newer() {
		t.Fatalf("status of a migrated database = %+v, %v; want nothing pending", s, err)
	}
	later := laterMigration()
	s, err = store.StatusWith(ctx, db, later)
	if err != nil || len(s.Pending) != 1 || s.Pending[0].Version != later.Version || s.Available != later.Version {
		t.Fatalf("status with a new migration = %+v, %v; want it alone pending", s, err)
	}
	reference, _ := testdb.ReferencePool(t)
	if s, err := store.Status(ctx, reference); err != nil || !s.Adopts || s.Pending[0].Version != 1 {
		t.Fatalf("status on the reference table = %+v, %v; want migration 1 to adopt it", s, err)
	}
}
