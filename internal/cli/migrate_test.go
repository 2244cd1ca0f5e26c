package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// migrateStatus is `migrate --status --json`'s object.
type migrateStatus struct {
	Applied   int   `json:"applied"`
	Available int   `json:"available"`
	Pending   []int `json:"pending"`
	Newer     bool  `json:"newer"`
	Adopts    bool  `json:"adopts"`
}

// schemaText is the schema's relations and functions: equal texts mean a
// command changed nothing.
func schemaText(t *testing.T, dsn string) string {
	t.Helper()
	var s string
	err := testdb.Pool(t, dsn).QueryRow(context.Background(), `SELECT concat_ws(' | ',
		(SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = current_schema()::regnamespace),
		(SELECT string_agg(proname || md5(prosrc), ',' ORDER BY proname) FROM pg_proc WHERE pronamespace = current_schema()::regnamespace))`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// --status and --dry-run tell what a migrate would do and change nothing;
// migrate then does it, and afterwards nothing is pending.
func TestMigrateStatusAndDryRun(t *testing.T) {
	t.Parallel()
	d := db{t: t, dsn: testdb.EmptyDSN(t)}
	latest := store.LatestVersion()

	var st migrateStatus
	decode(t, d.expect(0, "migrate", "--status", "--json"), &st)
	if st.Applied != 0 || st.Available != latest || len(st.Pending) != latest || st.Pending[0] != 1 || st.Newer {
		t.Fatalf("status of a new database = %+v; want every migration pending", st)
	}
	if r := d.expect(0, "migrate", "--status"); !strings.Contains(r.stdout, "migration 0 applied") ||
		!strings.Contains(r.stdout, "pending: 001 initial_schema") {
		t.Errorf("--status of a new database:\n%s", r)
	}
	before := schemaText(t, d.dsn)
	r := d.expect(0, "migrate", "--dry-run")
	for _, want := range []string{"apply 001 initial_schema", "re-create the protocol functions", "nothing was changed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--dry-run does not say %q:\n%s", want, r)
		}
	}
	if after := schemaText(t, d.dsn); after != before {
		t.Fatalf("--dry-run changed the database:\n%s\nbecame\n%s", before, after)
	}

	d.expect(0, "migrate")
	decode(t, d.expect(0, "migrate", "--status", "--json"), &st)
	if st.Applied != latest || len(st.Pending) != 0 || st.Newer {
		t.Fatalf("status after migrate = %+v; want nothing pending", st)
	}
	if r := d.expect(0, "migrate", "--dry-run"); !strings.Contains(r.stdout, "apply no migration") {
		t.Errorf("--dry-run of a migrated database:\n%s", r)
	}
	d.expect(2, "migrate", "--status", "--dry-run")
	d.expect(2, "migrate", "--json")
}

// A schema a newer lockctl migrated is refused by migrate and --dry-run,
// with a message that says it is newer, and shown as such by --status.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	if _, err := testdb.Pool(t, d.dsn).Exec(context.Background(),
		`INSERT INTO distributed_lock_migration (version, checksum) VALUES ($1, 'a later build')`, store.LatestVersion()+1); err != nil {
		t.Fatal(err)
	}
	before := schemaText(t, d.dsn)
	for _, args := range [][]string{{"migrate"}, {"migrate", "--dry-run"}} {
		if r := d.expect(1, args...); !strings.Contains(r.stderr, "newer") {
			t.Errorf("lockctl %s on a newer schema does not say it is newer:\n%s", strings.Join(args, " "), r)
		}
	}
	if after := schemaText(t, d.dsn); after != before {
		t.Fatal("a refused migrate changed the database")
	}
	var st migrateStatus
	decode(t, d.expect(0, "migrate", "--status", "--json"), &st)
	if !st.Newer || st.Applied != store.LatestVersion()+1 {
		t.Fatalf("status of a newer schema = %+v; want newer", st)
	}
	if r := d.expect(0, "migrate", "--status"); !strings.Contains(r.stdout, "newer than this lockctl") {
		t.Errorf("--status of a newer schema:\n%s", r)
	}
}

// A schema made by a build that recorded no checksums of its migrations
// (every build before v0.1.0, whose migration 1 differed) is refused by
// migrate, --dry-run and --status with what was found and what to do,
// never with "run lockctl migrate", the command that failed.
func TestMigrateRefusesASchemaItCannotRecognise(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	if _, err := testdb.Pool(t, d.dsn).Exec(context.Background(),
		`ALTER TABLE distributed_lock_migration DROP COLUMN checksum`); err != nil {
		t.Fatal(err)
	}
	before := schemaText(t, d.dsn)
	for _, args := range [][]string{{"migrate"}, {"migrate", "--dry-run"}, {"migrate", "--status"}} {
		r := d.expect(1, args...)
		if !strings.Contains(r.stderr, "did not record what its migrations were") ||
			!strings.Contains(r.stderr, "drop its lock tables") || strings.Contains(r.stderr, "run `lockctl migrate`") {
			t.Errorf("lockctl %s on an unrecognised schema:\n%s\nwant what it found and what to do", strings.Join(args, " "), r)
		}
	}
	if after := schemaText(t, d.dsn); after != before {
		t.Fatal("a refused migrate changed the database")
	}
}
