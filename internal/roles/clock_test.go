package roles_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// timeArgsSQL lists the functions role may execute that act and take a
// time, or a length of time as an interval, from their caller: that run as
// the schema's owner (SECURITY DEFINER, as every protocol call does) or may
// write (VOLATILE). What it leaves out are the readers' rules
// (distributed_lock_state): STABLE, run as their caller, reading only what
// it may read and writing nothing (PostgreSQL refuses a write in a STABLE
// function), they judge a lease at a time the caller names as its own
// SELECT could.
const timeArgsSQL = `
SELECT p.oid::regprocedure::text FROM pg_proc p
WHERE p.pronamespace = current_schema()::regnamespace AND has_function_privilege($1, p.oid, 'EXECUTE')
  AND (p.prosecdef OR p.provolatile = 'v')
  AND p.proargtypes::regtype[] && ARRAY['timestamptz', 'timestamp', 'date', 'time', 'timetz', 'interval']::regtype[]`

// A service cannot choose its own time. No function it may call that acts
// takes a time from it; it may read the protocol's clock (every reader does) but not
// replace it; and a clock of its own, in its temporary schema first on its
// path, is not the one the protocol reads: a lease it takes runs by the
// server's clock.
func TestAServiceCannotChooseItsTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	for _, kind := range roles.Kinds {
		db := e.roleWith(t, kind)
		role := db.Config().ConnConfig.User
		rows, _ := e.admin.Query(ctx, timeArgsSQL, role)
		fns, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(fns) > 0 {
			t.Errorf("a %s may call functions that take a time from it: %v", kind, fns)
		}
		var now time.Time
		if err := db.QueryRow(ctx, `SELECT distributed_lock_now()`).Scan(&now); err != nil {
			t.Errorf("a %s cannot read the protocol's clock: %v", kind, err)
		}
	}

	svc := e.roleWith(t, roles.Service)
	for what, sql := range map[string]string{
		"replace the clock": `CREATE OR REPLACE FUNCTION distributed_lock_now() RETURNS timestamptz LANGUAGE sql
			AS $$SELECT pg_catalog.clock_timestamp() + interval '1 year'$$`,
		"drop the clock": `DROP FUNCTION distributed_lock_now()`,
	} {
		_, err := svc.Exec(ctx, sql)
		wantDenied(t, what, store.Interpret(err))
	}

	conn, err := svc.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `CREATE FUNCTION pg_temp.distributed_lock_now() RETURNS timestamptz LANGUAGE sql
		AS $$SELECT pg_catalog.clock_timestamp() + interval '1 year'$$`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT set_config('search_path', 'pg_temp, ' || quote_ident($1), false)`, e.schema); err != nil {
		t.Fatal(err)
	}
	g, _, err := store.TryGrant(ctx, conn, store.GrantParams{Key: "k", Owner: "svc", TTL: time.Minute, Actor: "svc"})
	if err != nil || !g.Granted() {
		t.Fatalf("grant as the service: %+v, %v", g, err)
	}
	if left := g.ExpiresAt.Sub(testdb.DBNow(t, e.admin)); left > time.Minute {
		t.Errorf("a lease of a minute, taken with a clock of the service's own a year ahead on its path, "+
			"ends %s after the server's clock", left)
	}
}
