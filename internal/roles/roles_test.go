package roles_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

var roleSeq atomic.Int64

// env is a fresh migrated schema, an admin pool on it, and the schema name.
type env struct {
	dsn    string
	schema string
	admin  *pgxpool.Pool
}

func newEnv(t *testing.T) env {
	t.Helper()
	dsn := testdb.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := cfg.RuntimeParams["search_path"]
	if schema == "" {
		t.Fatalf("testdb DSN has no search_path: %s", dsn)
	}
	return env{dsn: dsn, schema: schema, admin: testdb.Pool(t, dsn)}
}

// loginRole creates a LOGIN role (roles are cluster-wide, so the name is
// unique per test), runs grants (as the admin), and returns a pool that
// connects as the role. The role and its privileges are dropped at cleanup.
func (e env) loginRole(t *testing.T, prefix string, grants []string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), roleSeq.Add(1))
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := e.admin.Exec(ctx, "CREATE ROLE "+quoted+" LOGIN"); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = e.admin.Exec(ctx, "DROP OWNED BY "+quoted)
		_, _ = e.admin.Exec(ctx, "DROP ROLE "+quoted)
	})
	for _, g := range grants {
		if _, err := e.admin.Exec(ctx, g); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	cfg, err := pgxpool.ParseConfig(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = name
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	return pool
}

func grantsFor(t *testing.T, kind roles.Kind, e env, role string) []string {
	t.Helper()
	stmts, err := roles.Statements(kind, e.schema, role)
	if err != nil {
		t.Fatal(err)
	}
	return stmts
}

// roleWith creates a role of kind with exactly its documented grants.
func (e env) roleWith(t *testing.T, kind roles.Kind) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool := e.loginRole(t, "lockctl_"+string(kind), nil)
	role := pool.Config().ConnConfig.User
	for _, g := range grantsFor(t, kind, e, role) {
		if _, err := e.admin.Exec(ctx, g); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	return pool
}

// makeLocks makes, as the admin, a held lock "held", a free lock "free" and an
// event history, so reads have something to return.
func makeLocks(t *testing.T, e env) locker.Lease {
	t.Helper()
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, LogGrants: true})
	held, err := testdb.Try(ctx, lk, e.admin, "held", "admin-owner")
	if err != nil {
		t.Fatal(err)
	}
	free, err := testdb.Try(ctx, lk, e.admin, "free", "admin-owner")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.One(lk.Release(ctx, e.admin, free)); err != nil {
		t.Fatal(err)
	}
	// "delayed" sits in a lock-delay, which only an operator may end.
	delaying := testdb.Locker(t, locker.Config{TTL: time.Minute})
	gone, err := testdb.TryDelayed(ctx, delaying, e.admin, "delayed", "admin-owner", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (operator.Operator{}).ForceRelease(ctx, e.admin, "delayed", gone.Token); err != nil {
		t.Fatal(err)
	}
	// "sem" has a holder's slot, which only the protocol may write.
	if _, err := testdb.One(lk.Acquire(ctx, e.admin, locker.Request{Keys: []locker.Key{{Name: "sem", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: "admin-owner"})); err != nil {
		t.Fatal(err)
	}
	return held
}

// caseName names a subtest after a REVOKE template: "EXECUTE ON FUNCTION
// distributed_lock_renew", "SELECT ON distributed_lock".
func caseName(revoke string) string {
	what, _, _ := strings.Cut(strings.TrimPrefix(revoke, "REVOKE "), " FROM ")
	what, _, _ = strings.Cut(what, "(")
	return strings.NewReplacer("%[1]s.", "", "%[1]s", "schema").Replace(what)
}

func wantDenied(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, locker.ErrPermissionDenied) {
		t.Errorf("%s: err = %v; want locker.ErrPermissionDenied", what, err)
	} else if !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("%s: message %q does not say permission denied", what, err)
	}
}

func TestViewerReadsButCannotWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	held := makeLocks(t, e)
	db := e.roleWith(t, roles.Viewer)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Actor: "viewer", LogGrants: true})

	locks, err := lockview.ListPrefix(ctx, db, "")
	if err != nil || len(locks) != 4 {
		t.Fatalf("viewer ListPrefix = %d rows, %v; want 4 rows", len(locks), err)
	}
	if hs, err := lockview.HoldersOf(ctx, db, []string{"sem"}); err != nil || len(hs["sem"]) != 1 {
		t.Fatalf("viewer HoldersOf(sem) = %v, %v; want its one holder", hs, err)
	}
	if l, found, err := store.Get[lockdb.LockInfo](ctx, db, "held"); err != nil || !found || l.Token != held.Token {
		t.Fatalf("viewer Get = %+v, %v, %v", l, found, err)
	}
	if ev, err := lockview.KeyEvents(ctx, db, "free", 10); err != nil || len(ev) != 2 {
		t.Fatalf("viewer KeyEvents = %d events, %v; want acquired+released", len(ev), err)
	}
	if ev, err := lockview.RecentEvents(ctx, db, 0, 10); err != nil || len(ev) != 5 {
		t.Fatalf("viewer RecentEvents = %d events, %v; want 5 (held, free's two, delayed's force-release, sem's permit)", len(ev), err)
	}
	if _, err := lockview.Waiters(ctx, db, "held"); err != nil {
		t.Fatalf("viewer Waiters: %v", err)
	}

	_, err = testdb.Try(ctx, lk, db, "new-key", "viewer")
	wantDenied(t, "TryAcquire", err)
	_, err = testdb.One(lk.Renew(ctx, db, held))
	wantDenied(t, "Renew", err)
	_, err = testdb.One(lk.Release(ctx, db, held))
	wantDenied(t, "Release", err)
	_, err = testdb.Operator(t, "viewer").ForceExpire(ctx, db, "held", held.Token)
	wantDenied(t, "ForceExpire", err)
	_, err = testdb.Operator(t, "viewer").ForceRelease(ctx, db, "held", held.Token)
	wantDenied(t, "ForceRelease", err)
	err = lk.ReportStaleWrite(ctx, db, held, "test")
	wantDenied(t, "ReportStaleWrite", err)
	_, err = testdb.Operator(t, "viewer").Prune(ctx, db, operator.PruneOptions{FreeFor: time.Nanosecond})
	wantDenied(t, "Prune", err)
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, held) })
	wantDenied(t, "Fence", err)

	// Nothing changed.
	if l, _, _ := store.Get[lockdb.LockInfo](ctx, e.admin, "held"); l.Token != held.Token || l.ReleasedAt != nil || l.RenewCount != 0 {
		t.Fatalf("held lock changed by a viewer: %+v", l)
	}
}

func TestOperatorForcesAndPrunesButCannotHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	held := makeLocks(t, e)
	db := e.roleWith(t, roles.Operator)
	op := testdb.Operator(t, "oncall")
	opLk := testdb.Locker(t, locker.Config{TTL: time.Minute, Actor: "oncall"})

	if locks, err := lockview.ListPrefix(ctx, db, ""); err != nil || len(locks) != 4 {
		t.Fatalf("operator ListPrefix = %d, %v", len(locks), err)
	}
	hs, err := lockview.HoldersOf(ctx, db, []string{"sem"})
	if err != nil || len(hs["sem"]) != 1 {
		t.Fatalf("operator HoldersOf(sem) = %v, %v", hs, err)
	}
	if ended, err := op.ForceRelease(ctx, db, "sem", hs["sem"][0].Token); err != nil || ended.Owner != "admin-owner" {
		t.Fatalf("operator ForceRelease of a permit = %+v, %v", ended, err)
	}
	expired, err := op.ForceExpire(ctx, db, "held", held.Token)
	if err != nil || expired.Outcome != operator.Expired {
		t.Fatalf("operator ForceExpire = %+v, %v", expired, err)
	}
	freed, err := op.ForceRelease(ctx, db, "held", held.Token)
	if err != nil || freed.Outcome != operator.ForceReleased {
		t.Fatalf("operator ForceRelease = %+v, %v", freed, err)
	}
	ev, err := lockview.KeyEvents(ctx, db, "held", 1)
	if err != nil || len(ev) != 1 || ev[0].Kind != lockdb.EventForceReleased || ev[0].Actor != "oncall" {
		t.Fatalf("latest event = %+v, %v; want force_released by oncall", ev, err)
	}
	res, err := op.Prune(ctx, db, operator.PruneOptions{FreeFor: time.Nanosecond, EventsOlderThan: time.Nanosecond})
	// Three free rows: held and sem, freed above, and free.
	if err != nil || res.Locks != 3 || res.Events == 0 {
		t.Fatalf("operator Prune = %+v, %v; want the three free rows and the events deleted", res, err)
	}

	// An operator is not a holder: it cannot take or extend a lease.
	_, err = testdb.Try(ctx, opLk, db, "k", "oncall")
	wantDenied(t, "operator TryAcquire", err)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	lease, err := testdb.Try(ctx, lk, e.admin, "k2", "svc")
	if err != nil {
		t.Fatal(err)
	}
	_, err = testdb.One(opLk.Renew(ctx, db, lease))
	wantDenied(t, "operator Renew", err)
	_, err = db.Exec(ctx, `UPDATE distributed_lock SET owner_id = 'forged'`)
	wantDenied(t, "operator UPDATE owner_id", store.Interpret(err))
}

func TestServiceRunsLockerOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	db := e.roleWith(t, roles.Service)
	if err := serviceWorkload(ctx, db, e.admin); err != nil {
		t.Fatalf("service workload: %v", err)
	}
	if _, err := e.admin.Exec(ctx, `CREATE TABLE other_table (x int); INSERT INTO other_table VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, sql string }{
		{"CREATE TABLE", `CREATE TABLE ` + pgx.Identifier{e.schema, "evil"}.Sanitize() + ` (x int)`},
		{"CREATE TABLE in public", `CREATE TABLE public.evil (x int)`},
		{"DELETE FROM distributed_lock_event", `DELETE FROM distributed_lock_event`},
		{"UPDATE distributed_lock_event", `UPDATE distributed_lock_event SET actor = 'x'`},
		{"DELETE FROM distributed_lock", `DELETE FROM distributed_lock`},
		{"TRUNCATE distributed_lock", `TRUNCATE distributed_lock`},
		{"SELECT another table", `SELECT x FROM other_table`},
		{"ALTER SEQUENCE", `ALTER SEQUENCE distributed_lock_fence_seq RESTART WITH 1`},
		{"setval", `SELECT setval('distributed_lock_fence_seq', 1)`},
	} {
		_, err := db.Exec(ctx, c.sql)
		err = store.Interpret(err)
		// ALTER on an object one does not own is "must be owner" (42501 too).
		wantDenied(t, "service "+c.what, err)
	}
	_, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{FreeFor: time.Nanosecond})
	wantDenied(t, "service Prune", err)
}

func TestReadOnlyRoleIsReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	db := e.roleWith(t, roles.Service)
	role := db.Config().ConnConfig.User
	if _, err := e.admin.Exec(ctx, `ALTER ROLE `+pgx.Identifier{role}.Sanitize()+` SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	db.Reset()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	_, err := testdb.Try(ctx, lk, db, "k", "svc")
	if !errors.Is(err, locker.ErrReadOnly) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("TryAcquire as a read-only role = %v; want locker.ErrReadOnly", err)
	}
	if _, err := lockview.ListPrefix(ctx, db, ""); err != nil {
		t.Fatalf("reads must still work on a read-only role: %v", err)
	}
}

func TestStatementsQuoteNames(t *testing.T) {
	stmts, err := roles.Statements(roles.Viewer, `we"ird`, `x"; DROP TABLE t; --`)
	if err != nil {
		t.Fatal(err)
	}
	want := `GRANT USAGE ON SCHEMA "we""ird" TO "x""; DROP TABLE t; --"`
	if !slices.Contains(stmts, want) {
		t.Fatalf("got %q\nwant among them %s", stmts, want)
	}
	if _, err := roles.Statements("admin", "s", "r"); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if _, err := roles.Statements(roles.Viewer, "", "r"); err == nil {
		t.Fatal("empty schema accepted")
	}
}

// TestHostileRoleName grants to a role whose name is an injection attempt:
// the statements run and grant exactly that role.
func TestHostileRoleName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	pool := e.loginRole(t, `evil"; DROP TABLE distributed_lock; --`, nil)
	role := pool.Config().ConnConfig.User
	for _, g := range grantsFor(t, roles.Viewer, e, role) {
		if _, err := e.admin.Exec(ctx, g); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	if _, err := lockview.ListPrefix(ctx, pool, ""); err != nil {
		t.Fatalf("hostile-named viewer cannot read: %v", err)
	}
	if _, err := lockview.ListPrefix(ctx, e.admin, ""); err != nil {
		t.Fatalf("table gone: %v", err)
	}
}
