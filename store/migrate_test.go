package store_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// badRowSQL are writes that break a value rule of the schema, each with
// valid values everywhere else.
var badRowSQL = map[string]string{
	"empty key": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('', 'o', 1, now(), '1s', now())`,
	"owner over 255 bytes": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('k', repeat('é', 128), 1, now(), '1s', now())`,
	"token 0": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('k', 'o', 0, now(), '1s', now())`,
	"ttl 0": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
		VALUES ('k', 'o', 1, now(), '0s', now())`,
	"grant kind": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, grant_kind)
		VALUES ('k', 'o', 1, now(), '1s', now(), 'renewed')`,
	"metadata array": `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, metadata)
		VALUES ('k', 'o', 1, now(), '1s', now(), '[]')`,
	"update to empty owner": `UPDATE distributed_lock SET owner_id = '' WHERE lock_key = 'kept'`,
	"event kind":            `INSERT INTO distributed_lock_event (lock_key, kind, actor) VALUES ('k', 'renewed', 'a')`,
	"empty actor":           `INSERT INTO distributed_lock_event (lock_key, kind, actor) VALUES ('k', 'released', '')`,
	"waiter owner":          `INSERT INTO distributed_lock_waiter (lock_key, owner_id, seen_until) VALUES ('k', '', now())`,
}

const keptRowSQL = `INSERT INTO distributed_lock (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
	VALUES ('kept', 'o', 7, now(), '1s', now())`

// checkConstraintsSQL counts table CHECK constraints left on the lock
// tables (NOT NULL is not one).
const checkConstraintsSQL = `
SELECT count(*) FROM pg_constraint
WHERE contype = 'c' AND conrelid IN ('distributed_lock'::regclass,
    'distributed_lock_event'::regclass, 'distributed_lock_waiter'::regclass)`

func TestSchemaRefusesBadValues(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, keptRowSQL); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, db.Exec)
}

// A database migrated by the schema that enforced the rules with table CHECK
// constraints moves to the domains: same rules, data kept, and migrating
// again changes nothing.
func TestMigrateMovesCheckConstraintsToDomains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedFrom(t, "schema-with-checks.sql")
	if _, err := db.Exec(ctx, keptRowSQL); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := store.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	var checks int
	if err := db.QueryRow(ctx, checkConstraintsSQL).Scan(&checks); err != nil {
		t.Fatal(err)
	}
	if checks != 0 {
		t.Errorf("%d table CHECK constraints left; want the domains only", checks)
	}
	var keyType, kindType string
	if err := db.QueryRow(ctx, `SELECT
		(SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass AND attname = 'lock_key'),
		(SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'distributed_lock_event'::regclass AND attname = 'kind')`).
		Scan(&keyType, &kindType); err != nil {
		t.Fatal(err)
	}
	if keyType != "distributed_lock_name" || kindType != "distributed_lock_event_kind" {
		t.Errorf("column types %s, %s; want the domains", keyType, kindType)
	}
	if l, found, err := store.Get(ctx, db, "kept"); err != nil || !found || l.Token != 7 {
		t.Fatalf("row after the upgrade = %+v, %v, %v; want it kept", l, found, err)
	}
	assertRefused(t, db.Exec)
	// The upgraded table has every column today's statements use.
	g, _, err := store.TryGrant(ctx, db, store.GrantParams{Key: "upgraded", Owner: "o", TTL: time.Minute, Actor: "o"})
	if err != nil || !g.Granted() {
		t.Fatalf("grant after the upgrade = %+v, %v", g, err)
	}
	if _, ok, err := store.Release(ctx, db, store.ReleaseParams{LeaseRef: store.LeaseRef{Key: "upgraded", Owner: "o", Token: g.Token}}); err != nil || !ok {
		t.Fatalf("release after the upgrade: %v, %v", ok, err)
	}
}

func assertRefused(t *testing.T, exec func(context.Context, string, ...any) (pgconn.CommandTag, error)) {
	t.Helper()
	for name, sql := range badRowSQL {
		_, err := exec(context.Background(), sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Errorf("%s: %v; want a check violation", name, err)
			continue
		}
		if !strings.Contains(pgErr.Message, "distributed_lock_") {
			t.Errorf("%s: %q does not name the rule", name, pgErr.Message)
		}
	}
}

// A table made by a version that indexed the console's sort columns loses
// those indexes on migrate (they made every grant a non-HOT update), while
// indexes an operator added under other names are left alone.
func TestMigrateDropsOldSortIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// docs/operations.md gives operators these statements.
	if page, err := os.ReadFile("../docs/operations.md"); err != nil || !strings.Contains(string(page), testdataSQL(t, "sort-indexes.sql")) {
		t.Errorf("docs/operations.md does not give testdata/sort-indexes.sql verbatim (%v)", err)
	}
	db := migratedFrom(t, "schema-with-checks.sql", "sort-indexes.sql")
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, `SELECT indexrelid::regclass::text FROM pg_index
		WHERE indrelid = 'distributed_lock'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"distributed_lock_by_acquired", "distributed_lock_by_expiry", "distributed_lock_by_token", "distributed_lock_pkey"}
	if !slices.Equal(got, want) {
		t.Errorf("indexes after migrate: %q; want %q", got, want)
	}
}

// A waiter table made with an index on (lock_key, waiting_since) keeps only
// the queue's index after migrate: every enqueue writes one index less.
func TestMigrateDropsTheWaiterSinceIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedFrom(t, "schema-with-checks.sql")
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, `SELECT indexrelid::regclass::text FROM pg_index
		WHERE indrelid = 'distributed_lock_waiter'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"distributed_lock_waiter_pkey", "distributed_lock_waiter_queue_idx"}
	if !slices.Equal(got, want) {
		t.Errorf("waiter indexes after migrate: %q; want %q", got, want)
	}
}

// testdataPath is where testdata file name is: sort-indexes.sql, the
// operator's indexes for the console's orders, lives with the read model.
func testdataPath(name string) string {
	if name == "sort-indexes.sql" {
		return "../internal/lockview/testdata/" + name
	}
	return "testdata/" + name
}

// testdataSQL is the text of testdata/name.
func testdataSQL(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(testdataPath(name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// migratedFrom is a new, empty database migrated with each of the named
// testdata files in turn: a database as an earlier version (and its
// operator) left it.
func migratedFrom(t *testing.T, names ...string) *pgxpool.Pool {
	t.Helper()
	db := testdb.Pool(t, testdb.EmptyDSN(t))
	for _, name := range names {
		if err := store.ApplyScript(context.Background(), db, testdataSQL(t, name)); err != nil {
			t.Fatalf("migrate with %s: %v", name, err)
		}
	}
	return db
}

// Several lock namespaces (schemas) on one database each get the protocol
// functions in their own schema, bound to their own tables: a grant in one
// never touches another's rows. The functions run as their owner with a
// pinned search_path, and nobody else may call them until granted.
func TestProtocolFunctionsStayInTheirSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one, two := testdb.New(t), testdb.New(t)
	for _, db := range []*pgxpool.Pool{one, two} {
		var schema string
		if err := db.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(ctx, `
SELECT p.proname, p.pronamespace::regnamespace::text, p.prosecdef,
       coalesce(array_to_string(p.proconfig, ';'), ''), has_function_privilege('public', p.oid, 'EXECUTE')
FROM pg_proc p
WHERE p.proname LIKE 'distributed\_lock\_%' AND pg_function_is_visible(p.oid)
  AND p.proname NOT IN ('distributed_lock_event_immutable', 'distributed_lock_has_waiters')`)
		if err != nil {
			t.Fatal(err)
		}
		type fn struct {
			name, schema string
			definer      bool
			config       string
			public       bool
		}
		fns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (f fn, err error) {
			err = r.Scan(&f.name, &f.schema, &f.definer, &f.config, &f.public)
			return f, err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(fns) < 12 {
			t.Fatalf("%d protocol functions found; want at least 12: %+v", len(fns), fns)
		}
		for _, f := range fns {
			want := "search_path=" + schema + ", pg_catalog, pg_temp"
			// The queue's internal helpers run only inside the functions
			// above, as their owner: they need no SECURITY DEFINER.
			definer := f.name != "distributed_lock_hand_off" && f.name != "distributed_lock_keep_waking"
			if f.schema != schema || f.definer != definer || f.config != want || f.public {
				t.Errorf("%s: schema %s, security definer %v, config %q, PUBLIC may execute %v; want %s, %v, %q, false",
					f.name, f.schema, f.definer, f.config, f.public, schema, definer, want)
			}
		}
	}
	g, _, err := store.TryGrant(ctx, one, store.GrantParams{Key: "k", Owner: "a", TTL: time.Minute, Actor: "a"})
	if err != nil || !g.Granted() {
		t.Fatalf("grant in the first schema: %+v, %v", g, err)
	}
	if _, found, err := store.Get(ctx, two, "k"); err != nil || found {
		t.Fatalf("the second schema sees the first one's grant: %v, %v", found, err)
	}
	first := g.Token
	g, _, err = store.TryGrant(ctx, two, store.GrantParams{Key: "k", Owner: "b", TTL: time.Minute, Actor: "b"})
	if err != nil || g.Outcome != store.OutcomeAcquired || g.Token != first {
		t.Fatalf("grant of the same key in the second schema: %+v, %v; want acquired with its own first token %d", g, err, first)
	}
}
