package store_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// psqlApply runs `psql -1 -f ../schema.sql` as a psql user would, on the
// schema of dsn, and returns its output.
func psqlApply(t *testing.T, dsn string) (string, error) {
	t.Helper()
	return psqlApplyFile(t, dsn, "../schema.sql")
}

// psqlApplyFile runs `psql -1 -f file` on the schema of dsn.
func psqlApplyFile(t *testing.T, dsn, file string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		testdb.Unavailable(t, "no psql (install postgresql-client): %v", err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("psql", "-X", "-q", "-1", "-f", file)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PGHOST=" + cfg.Host, "PGPORT=" + strconv.Itoa(int(cfg.Port)),
		"PGDATABASE=" + cfg.Database, "PGUSER=" + cfg.User, "PGPASSWORD=" + cfg.Password,
		"PGOPTIONS=-c search_path=" + cfg.RuntimeParams["search_path"], "PGSSLMODE=prefer"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// catalogSQL describes the lock schema's objects: every relation with its
// columns, every function with its arguments, result, settings and body,
// and the recorded versions. Equal texts: the same schema.
const catalogSQL = `
SELECT concat_ws(E'\n',
    (SELECT string_agg(format('%s %s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull),
                       E'\n' ORDER BY c.relname, a.attnum)
     FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE c.relnamespace = current_schema()::regnamespace),
    (SELECT string_agg(format('%s(%s) %s %s %s %s', p.proname, pg_get_function_arguments(p.oid),
                              pg_get_function_result(p.oid), p.prosecdef, p.proconfig, md5(p.prosrc)),
                       E'\n' ORDER BY p.proname)
     FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace),
    (SELECT string_agg(version::text, ',' ORDER BY version) FROM distributed_lock_migration))`

func catalogText(t *testing.T, db store.DBTX) string {
	t.Helper()
	var s string
	if err := db.QueryRow(context.Background(), catalogSQL).Scan(&s); err != nil {
		t.Fatal(err)
	}
	// Each function pins search_path to its own schema's name.
	var schema string
	if err := db.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(s, schema, "SCHEMA")
}

// schema.sql is what migrate applies: psql makes the same schema on a new
// database, applies nothing twice when run again (on its own database or
// one Migrate made), and refuses a schema a newer lockctl migrated.
func TestPsqlAppliesSchemaSQLAsMigrateDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := catalogText(t, testdb.New(t))

	dsn := testdb.EmptyDSN(t)
	db := testdb.Pool(t, dsn)
	for range 2 {
		if out, err := psqlApply(t, dsn); err != nil {
			t.Fatalf("psql -1 -f schema.sql: %v\n%s", err, out)
		}
		if got := catalogText(t, db); got != want {
			t.Fatalf("psql made\n%s\nwant what Migrate makes:\n%s", got, want)
		}
	}
	g, _, err := store.TryGrant(ctx, db, store.GrantParams{Key: "k", Owner: "o", TTL: 60e9, Actor: "o"})
	if err != nil || !g.Granted() {
		t.Fatalf("grant on the psql schema: %+v, %v", g, err)
	}

	migrated := testdb.DSN(t)
	if out, err := psqlApply(t, migrated); err != nil {
		t.Fatalf("psql -1 -f schema.sql on a migrated database: %v\n%s", err, out)
	}
	if got := catalogText(t, testdb.Pool(t, migrated)); got != want {
		t.Fatalf("psql on a migrated database made\n%s\nwant\n%s", got, want)
	}

	if _, err := db.Exec(ctx, `INSERT INTO distributed_lock_migration (version, checksum) VALUES ($1, 'a later build')`, store.LatestVersion()+1); err != nil {
		t.Fatal(err)
	}
	before := catalogText(t, db)
	out, err := psqlApply(t, dsn)
	if err == nil || !strings.Contains(out, "newer") {
		t.Fatalf("psql on a newer schema: %v\n%s; want a refusal that says it is newer", err, out)
	}
	if after := catalogText(t, db); after != before {
		t.Fatal("a refused psql run changed the schema")
	}
}
