package roles_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/store"
)

// builtInShadows stand in for built-ins the protocol calls, with the
// built-ins' own argument types, and log each call in shadow_ran before
// doing what the built-in does. A role that may create in the lock schema
// can make them; none may run inside the protocol.
var builtInShadows = []string{
	`CREATE TABLE shadow_ran (fn text, as_role text)`,
	`GRANT INSERT ON shadow_ran TO PUBLIC`,
	`CREATE FUNCTION shadow_log(fn text) RETURNS void LANGUAGE sql AS $$ INSERT INTO shadow_ran VALUES (fn, current_user) $$`,
	`CREATE FUNCTION clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT shadow_log('clock_timestamp()'); SELECT pg_catalog.clock_timestamp() $$`,
	`CREATE FUNCTION now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT shadow_log('now()'); SELECT pg_catalog.now() $$`,
	`CREATE FUNCTION pg_notify(text, text) RETURNS void LANGUAGE sql AS $$ SELECT shadow_log('pg_notify'); SELECT pg_catalog.pg_notify($1, $2) $$`,
	`CREATE FUNCTION set_config(text, text, boolean) RETURNS text LANGUAGE sql AS $$ SELECT shadow_log('set_config'); SELECT pg_catalog.set_config($1, $2, $3) $$`,
	`CREATE FUNCTION current_setting(text) RETURNS text LANGUAGE sql AS $$ SELECT shadow_log('current_setting'); SELECT pg_catalog.current_setting($1) $$`,
	`CREATE FUNCTION nextval(regclass) RETURNS bigint LANGUAGE sql AS $$ SELECT shadow_log('nextval'); SELECT pg_catalog.nextval($1) $$`,
	`CREATE FUNCTION hashtext(text) RETURNS integer LANGUAGE sql AS $$ SELECT shadow_log('hashtext'); SELECT pg_catalog.hashtext($1) $$`,
	`CREATE FUNCTION jsonb_strip_nulls(jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT shadow_log('jsonb_strip_nulls'); SELECT pg_catalog.jsonb_strip_nulls($1) $$`,
	`CREATE FUNCTION pg_current_wal_lsn() RETURNS pg_lsn LANGUAGE sql AS $$ SELECT shadow_log('pg_current_wal_lsn'); SELECT pg_catalog.pg_current_wal_lsn() $$`,
	`CREATE FUNCTION shadow_text_eq(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT shadow_log('=(text, text)'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$`,
	`CREATE OPERATOR = (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow_text_eq)`,
	`CREATE FUNCTION shadow_bigint_eq(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT shadow_log('=(bigint, bigint)'); SELECT $1 OPERATOR(pg_catalog.=) $2 $$`,
	`CREATE OPERATOR = (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = shadow_bigint_eq)`,
	`CREATE FUNCTION shadow_after(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS $$ SELECT shadow_log('>(timestamptz, timestamptz)'); SELECT $1 OPERATOR(pg_catalog.>) $2 $$`,
	`CREATE OPERATOR > (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = shadow_after)`,
	`CREATE FUNCTION shadow_plus(timestamptz, interval) RETURNS timestamptz LANGUAGE sql AS $$ SELECT shadow_log('+(timestamptz, interval)'); SELECT $1 OPERATOR(pg_catalog.+) $2 $$`,
	`CREATE OPERATOR + (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = shadow_plus)`,
	`CREATE FUNCTION shadow_minus(timestamptz, timestamptz) RETURNS interval LANGUAGE sql AS $$ SELECT shadow_log('-(timestamptz, timestamptz)'); SELECT $1 OPERATOR(pg_catalog.-) $2 $$`,
	`CREATE OPERATOR - (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = shadow_minus)`,
}

// lockSchemaCreator is a login role with a viewer's grants that may also
// create objects in the lock schema (PostgreSQL 14's default for public,
// kept by pg_upgrade).
func lockSchemaCreator(t *testing.T, e env) (*pgxpool.Pool, string) {
	t.Helper()
	db := e.roleWith(t, roles.Viewer)
	role := db.Config().ConnConfig.User
	if _, err := e.admin.Exec(context.Background(), fmt.Sprintf("GRANT CREATE ON SCHEMA %s TO %s",
		pgx.Identifier{e.schema}.Sanitize(), pgx.Identifier{role}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	return db, role
}

// The protocol searches pg_catalog first: a function or operator made in
// the lock schema with a built-in's name and argument types never runs in
// it, for a service's work or an operator's.
func TestBuiltInShadowsDoNotRun(t *testing.T) {
	t.Parallel()
	for kind, workload := range map[roles.Kind]func(context.Context, *pgxpool.Pool, *pgxpool.Pool) error{
		roles.Service: serviceWorkload, roles.Operator: operatorWorkload,
	} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			creator, _ := lockSchemaCreator(t, e)
			for _, s := range builtInShadows {
				if _, err := creator.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			if err := workload(ctx, e.roleWith(t, kind), e.admin); err != nil {
				t.Fatalf("%s workload beside the shadows: %v", kind, err)
			}
			rows, _ := e.admin.Query(ctx, `SELECT DISTINCT fn || ' as ' || as_role FROM shadow_ran ORDER BY 1`)
			ran, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if len(ran) > 0 {
				t.Errorf("shadows ran inside the protocol: %v", ran)
			}
		})
	}
}

// runHintRE finds what the refusal says to run: each problem ends with it
// in brackets, before the next ("; ") or the SQLSTATE.
var runHintRE = regexp.MustCompile(`\(run(?:, as a superuser)?: (.*?)\)(?:; | \(SQLSTATE)`)

// Migrate and grant refuse a lock schema where another role may create
// objects, naming the role and the REVOKE to run; once it may not, they
// refuse the functions and operators it made there (on lockctl's own
// types, which pg_catalog's place on the path does not shadow), naming
// each and the DROP to run; once those are gone, they go ahead.
func TestMigrateRefusesAnOpenLockSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	creator, role := lockSchemaCreator(t, e)
	for _, s := range []string{
		`CREATE FUNCTION shadow_name_eq(distributed_lock_name, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$`,
		`CREATE OPERATOR = (LEFTARG = distributed_lock_name, RIGHTARG = text, FUNCTION = shadow_name_eq)`,
	} {
		if _, err := creator.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// The test's names need no quotes, so the refusal shows them bare.
	schema := e.schema
	revoke := fmt.Sprintf("REVOKE CREATE ON SCHEMA %s FROM %s", schema, role)
	wantRefused(t, e, revoke)
	if _, err := e.admin.Exec(ctx, revoke); err != nil {
		t.Fatal(err)
	}
	refused := wantRefused(t, e, "DROP OPERATOR", "DROP FUNCTION", "owned by "+role)
	for _, m := range runHintRE.FindAllStringSubmatch(refused, -1) {
		if _, err := e.admin.Exec(ctx, m[1]); err != nil {
			t.Fatalf("%s, as the refusal says: %v", m[1], err)
		}
	}
	if err := store.Migrate(ctx, e.admin); err != nil {
		t.Fatalf("migrate once the schema is closed again: %v", err)
	}
	if _, err := e.admin.Exec(ctx, "GRANT CREATE ON SCHEMA "+schema+" TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, e, "REVOKE CREATE ON SCHEMA "+schema+" FROM PUBLIC")
	if _, err := e.admin.Exec(ctx, "REVOKE CREATE ON SCHEMA "+schema+" FROM PUBLIC"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Exec(ctx, "ALTER SCHEMA "+schema+" OWNER TO "+role); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, e, "ALTER SCHEMA "+schema+" OWNER TO")
}

// wantRefused checks that migrate and grant's check both refuse the lock
// schema with lockdb.ErrSchemaOpen, saying each of says, and returns the
// refusal.
func wantRefused(t *testing.T, e env, says ...string) string {
	t.Helper()
	ctx := context.Background()
	err := store.Migrate(ctx, e.admin)
	if !errors.Is(err, lockdb.ErrSchemaOpen) {
		t.Fatalf("migrate: %v; want lockdb.ErrSchemaOpen", err)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("migrate's refusal does not say %q: %v", s, err)
		}
	}
	checked := pgx.BeginFunc(ctx, e.admin, func(tx pgx.Tx) error { return store.CheckLockSchema(ctx, tx, e.schema) })
	if !errors.Is(checked, lockdb.ErrSchemaOpen) || refusal(checked) != refusal(err) {
		t.Errorf("grant's check: %v; want migrate's refusal", checked)
	}
	return refusal(err)
}

// refusal is the guard's message, whatever the error says around it.
func refusal(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	return pgErr.Error()
}
