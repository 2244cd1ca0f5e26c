package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// releasedMigrations are the checksums of the migrations a release
// shipped. A released migration never changes: a schema a release made
// must stay one every later build recognises (migrate_checksum.go), so a
// change to the tables is a new numbered migration instead.
var releasedMigrations = map[int]string{
	1: "d284d20faaa210635d73375cd7ab8874e2877bf565dd28e4c48d2528d8485daf", // v0.1.0
}

// releases are the schema.sql files the releases shipped, kept in
// testdata/released so that each later build is migrated from them.
var releases = []string{"v0.1.0"}

func TestReleasedMigrationsNeverChange(t *testing.T) {
	have := map[int]store.Migration{}
	for _, m := range store.Migrations() {
		have[m.Version] = m
	}
	for v, sum := range releasedMigrations {
		m, ok := have[v]
		switch {
		case !ok:
			t.Errorf("migration %03d was released and is gone", v)
		case m.Checksum() != sum:
			t.Errorf("migration %03d was released (checksum %.12s…) and has changed (%.12s…): "+
				"put the change in a new migration, %03d, and test it from the released schema",
				v, sum, m.Checksum(), store.LatestVersion()+1)
		}
	}
}

// A database a release made, with leases held through that release's
// functions, migrates to this build without losing one: the holders keep
// their keys against other owners, renew and release them with the tokens
// they were given, and the next grant's token is above theirs.
func TestMigrateFromEveryReleaseWithLocksHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, release := range releases {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.EmptyDSN(t)
			if out, err := psqlApplyFile(t, dsn, "testdata/released/"+release+".sql"); err != nil {
				t.Fatalf("psql -1 -f %s's schema.sql: %v\n%s", release, err, out)
			}
			db := testdb.Pool(t, dsn)
			var writer, reader int64
			if err := db.QueryRow(ctx, `SELECT fence_token FROM distributed_lock_acquire('w', 'old-writer', 600000000)`).Scan(&writer); err != nil {
				t.Fatalf("an exclusive lease through %s's acquire: %v", release, err)
			}
			if err := db.QueryRow(ctx, `SELECT fence_token FROM distributed_lock_acquire_shared('r', 'old-reader', 600000000)`).Scan(&reader); err != nil {
				t.Fatalf("a shared lease through %s's acquire_shared: %v", release, err)
			}

			if err := store.Migrate(ctx, db); err != nil {
				t.Fatalf("migrate from %s with leases held: %v", release, err)
			}
			if left, missing := setDifference(protocolFunctions(t, db), protocolFunctions(t, testdb.New(t))); len(left)+len(missing) > 0 {
				t.Errorf("after migrating from %s, functions a new database lacks: %v; missing: %v (a function whose "+
					"arguments changed keeps its old signature too, which a call may match as well: drop it in a "+
					"functions file, sql/functions/97_retired.sql)", release, left, missing)
			}

			lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
			if _, err := testdb.Try(ctx, lk, db, "w", "new-writer"); !errors.Is(err, locker.ErrHeld) {
				t.Errorf("another owner's acquire of %s's exclusive lease after migrate: %v; want ErrHeld", release, err)
			}
			if _, err := testdb.Try(ctx, lk, db, "r", "new-writer"); !errors.Is(err, locker.ErrHeld) {
				t.Errorf("a writer beside %s's shared lease after migrate: %v; want ErrHeld", release, err)
			}
			old := locker.Lease{Key: "w", Owner: "old-writer", Token: writer, Mode: locker.ModeExclusive}
			if _, err := testdb.One(lk.Renew(ctx, db, old)); err != nil {
				t.Errorf("renewing %s's lease by its token after migrate: %v", release, err)
			}
			if _, err := testdb.One(lk.Release(ctx, db, old)); err != nil {
				t.Fatalf("releasing %s's lease by its token after migrate: %v", release, err)
			}
			next, err := testdb.Try(ctx, lk, db, "w", "new-writer")
			if err != nil || next.Token <= writer || next.Token <= reader {
				t.Errorf("the grant after %s's lease: %+v, %v; want a token above %d and %d", release, next, err, writer, reader)
			}
		})
	}
}

// protocolFunctions lists the signatures of the lock schema's functions.
func protocolFunctions(t *testing.T, db *pgxpool.Pool) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `
SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return fns
}

// setDifference returns what only a has and what only b has.
func setDifference(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}
