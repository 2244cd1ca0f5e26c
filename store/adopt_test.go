package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// adopt is what `lockctl migrate` asks for.
var adopt = store.MigrateOptions{AdoptReference: true}

// A reference row that breaks one of lockctl's rules makes migrate refuse,
// name every such row, and leave the database exactly as it was.
func TestMigrateRefusesBadReferenceRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testdb.ReferencePool(t)
	in := time.Now().Add(time.Hour)
	testdb.InsertReference(t, db, time.UTC,
		testdb.ReferenceLock{Key: "good", Owner: "app-1", Token: 1700000000000, ExpiresAt: in},
		testdb.ReferenceLock{Key: "no-owner", Owner: "", Token: 1700000000001, ExpiresAt: in},
		testdb.ReferenceLock{Key: strings.Repeat("é", 200), Owner: "app-1", Token: 1700000000002, ExpiresAt: in},
		testdb.ReferenceLock{Key: "escape\x1b[31m", Owner: "app-1", Token: 0, ExpiresAt: in},
	)
	for _, sql := range []string{
		`INSERT INTO distributed_lock VALUES ('no-token', 'app-2', NULL, now()::timestamp)`,
		`INSERT INTO distributed_lock VALUES ('no-expiry', 'app-2', 1700000000003, NULL)`,
	} {
		if _, err := db.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	before := databaseText(t, db)
	_, err := store.MigrateWith(ctx, db, adopt)
	if !errors.Is(err, lockdb.ErrCannotAdopt) {
		t.Fatalf("migrate with bad rows: %v; want ErrCannotAdopt", err)
	}
	for _, want := range []string{
		`"no-owner": owner_id is empty`,
		`"` + strings.Repeat("é", 64) + `": lock_key is 400 bytes, more than 255`,
		`"escape\u001b[31m": fence_token is 0, not positive`,
		`"no-token": fence_token is NULL`,
		`"no-expiry": expires_at is NULL`,
		"5 row(s)", "Nothing was changed",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), `"good"`) {
		t.Errorf("refusal names the good row:\n%v", err)
	}
	if after := databaseText(t, db); after != before {
		t.Fatalf("a refused migrate changed the database:\n%s\nbecame\n%s", before, after)
	}
}

// A distributed_lock that is neither lockctl's nor the reference's is left
// alone, with its columns named.
func TestMigrateRefusesAnUnknownTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.EmptyDSN(t))
	if _, err := db.Exec(ctx, `CREATE TABLE distributed_lock (lock_key text PRIMARY KEY, holder text, until timestamptz)`); err != nil {
		t.Fatal(err)
	}
	before := databaseText(t, db)
	err := store.Migrate(ctx, db)
	if !errors.Is(err, lockdb.ErrCannotAdopt) || !strings.Contains(err.Error(), "lock_key text, holder text, until timestamp with time zone") {
		t.Fatalf("migrate of an unknown table: %v; want ErrCannotAdopt naming its columns", err)
	}
	if after := databaseText(t, db); after != before {
		t.Fatalf("a refused migrate changed the database:\n%s\nbecame\n%s", before, after)
	}
}

// An adopted table is the table schema.sql makes, column for column, and
// migrating it again changes nothing: not the rows, not the sequence.
func TestMigrateAdoptsIntoTodaysTableOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testdb.ReferencePool(t)
	testdb.InsertReference(t, db, time.UTC,
		testdb.ReferenceLock{Key: "a", Owner: "app-1", Token: 1700000000000, ExpiresAt: time.Now().Add(time.Minute)})
	if _, err := store.MigrateWith(ctx, db, adopt); err != nil {
		t.Fatal(err)
	}
	if got, want := columnsText(t, db), columnsText(t, testdb.New(t)); got != want {
		t.Errorf("adopted table's columns:\n%s\nwant those of a new table:\n%s", got, want)
	}
	first := databaseText(t, db)
	if a, err := store.MigrateWith(ctx, db, store.MigrateOptions{ReferenceTimeZone: "UTC", AdoptReference: true}); err != nil || a.Adopted {
		t.Fatalf("second migrate = %+v, %v; want no adoption", a, err)
	}
	if again := databaseText(t, db); again != first {
		t.Fatalf("a second migrate changed the adopted database:\n%s\nbecame\n%s", first, again)
	}
}

// Without a zone, migrate reads the reference's local times in the
// session's TimeZone (PGTZ or the DSN's timezone); a zone PostgreSQL does
// not know is refused before anything runs.
func TestMigrateReferenceTimeZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dsn := testdb.ReferencePool(t)
	db := testdb.Pool(t, testdb.WithParam(dsn, "timezone", "America/New_York"))
	expires := testdb.DBNow(t, db).Add(time.Hour).Truncate(time.Microsecond)
	newYork, err := time.LoadLocation("America/New_York") // from time/tzdata if the system has none
	if err != nil {
		t.Fatal(err)
	}
	testdb.InsertReference(t, db, newYork, testdb.ReferenceLock{Key: "a", Owner: "app-1", Token: 1, ExpiresAt: expires})

	before := databaseText(t, db)
	_, err = store.MigrateWith(ctx, db, store.MigrateOptions{ReferenceTimeZone: "Mars/Olympus_Mons", AdoptReference: true})
	if !errors.Is(err, store.ErrUnknownTimeZone) || !strings.Contains(err.Error(), "Mars/Olympus_Mons") {
		t.Fatalf("migrate with an unknown zone: %v; want ErrUnknownTimeZone naming it", err)
	}
	if after := databaseText(t, db); after != before {
		t.Fatalf("a refused migrate changed the database")
	}
	if _, err := store.MigrateWith(ctx, db, adopt); err != nil {
		t.Fatal(err)
	}
	l, _, err := store.Get[lockdb.LockInfo](ctx, db, "a")
	if err != nil || !l.ExpiresAt.Equal(expires) {
		t.Fatalf("adopted in the session's zone: expires %s, %v; want %s", l.ExpiresAt.UTC(), err, expires.UTC())
	}
	// Token 1 was taken by the reference: the sequence starts above it (in
	// the timeline's epoch, schema.sql's distributed_lock_advance_epoch).
	g, _, err := store.TryGrant(ctx, db, store.GrantParams{Key: "b", Owner: "o", TTL: time.Minute, Actor: "o"})
	if err != nil || g.Token <= 1 {
		t.Fatalf("first grant after adopting token 1 = %d, %v; want above 1", g.Token, err)
	}
}

func TestTableShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reference, _ := testdb.ReferencePool(t)
	for want, db := range map[store.Shape]store.DBTX{
		store.ShapeMissing:   testdb.Pool(t, testdb.EmptyDSN(t)),
		store.ShapeReference: reference,
		store.ShapeLockctl:   testdb.New(t),
	} {
		if got, err := store.TableShape(ctx, db); err != nil || got != want {
			t.Errorf("TableShape = %q, %v; want %q", got, err, want)
		}
	}
}

// databaseText is the schema's rows, column definitions, relations and
// token sequence as text: equal texts mean nothing was changed.
func databaseText(t *testing.T, db store.DBTX) string {
	t.Helper()
	var rows, rels, seq string
	err := db.QueryRow(context.Background(), `SELECT
		coalesce((SELECT string_agg(l::text, E'\n' ORDER BY l::text) FROM distributed_lock l), ''),
		(SELECT string_agg(c.relname || ' ' || c.relkind::text, ', ' ORDER BY c.relname)
		 FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace),
		coalesce(pg_sequence_last_value(to_regclass('distributed_lock_fence_seq'))::text, 'unused')`).Scan(&rows, &rels, &seq)
	if err != nil {
		t.Fatal(err)
	}
	return rows + "\n" + columnsText(t, db) + "\n" + rels + "\n" + seq
}

// columnsText lists distributed_lock's columns: name, type, NOT NULL and
// default, in order.
func columnsText(t *testing.T, db store.DBTX) string {
	t.Helper()
	var s string
	err := db.QueryRow(context.Background(), `
		SELECT string_agg(format('%s %s %s %s', a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
		                         pg_get_expr(d.adbin, d.adrelid)), E'\n' ORDER BY a.attnum)
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = 'distributed_lock'::regclass AND a.attnum > 0 AND NOT a.attisdropped`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
