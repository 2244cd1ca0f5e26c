package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// otherBuilds are lock schemas this build did not make as it has them: one
// made by a build that recorded no checksums (every build before v0.1.0),
// and one whose migration 1 was another build's text.
var otherBuilds = map[string]struct{ alter, says string }{
	"no checksums recorded": {
		`ALTER TABLE distributed_lock_migration DROP COLUMN checksum`,
		"did not record what its migrations were",
	},
	"another build's migration 1": {
		`UPDATE distributed_lock_migration SET checksum = repeat('0', 64) WHERE version = 1`,
		"001 (checksum 000000000000…, this build's",
	},
}

// A schema another build made is refused before anything runs on it, by
// Migrate, by its status and by schema.sql, with a message that says what
// was found and what to do (not "run lockctl migrate", the command that
// failed), and is left as it was.
func TestMigrateRefusesAnotherBuildsSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, c := range otherBuilds {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.DSN(t)
			db := testdb.Pool(t, dsn)
			if _, err := db.Exec(ctx, c.alter); err != nil {
				t.Fatal(err)
			}
			before := catalogText(t, db)
			err := store.Migrate(ctx, db)
			if !errors.Is(err, lockdb.ErrSchemaUnknown) || !strings.Contains(err.Error(), c.says) ||
				!strings.Contains(err.Error(), "drop its lock tables") || errors.Is(err, locker.ErrNotMigrated) {
				t.Fatalf("migrate: %v; want ErrSchemaUnknown saying %q and what to do", err, c.says)
			}
			if _, err := store.Status(ctx, db); !errors.Is(err, lockdb.ErrSchemaUnknown) {
				t.Errorf("status: %v; want ErrSchemaUnknown", err)
			}
			out, err := psqlApply(t, dsn)
			if err == nil || !strings.Contains(out, c.says) {
				t.Errorf("psql -f schema.sql: %v\n%s\nwant it refused, saying %q", err, out, c.says)
			}
			if after := catalogText(t, db); after != before {
				t.Fatal("a refused migrate changed the schema")
			}
		})
	}
}

// Each migration is recorded with the checksum of the text that applied it,
// by Migrate and by schema.sql alike.
func TestMigrationsAreRecordedWithTheirChecksums(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	viaPsql := testdb.EmptyDSN(t)
	if out, err := psqlApply(t, viaPsql); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	for how, db := range map[string]store.DBTX{"migrate": testdb.New(t), "schema.sql": testdb.Pool(t, viaPsql)} {
		for _, m := range store.Migrations() {
			var sum string
			if err := db.QueryRow(ctx, `SELECT checksum FROM distributed_lock_migration WHERE version = $1`, m.Version).Scan(&sum); err != nil || sum != m.Checksum() {
				t.Errorf("%s recorded migration %d with checksum %q, %v; want %s", how, m.Version, sum, err, m.Checksum())
			}
		}
	}
}
