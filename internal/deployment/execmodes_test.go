package deployment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/lockview"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/internal/workload"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// execModes are every query exec mode pgx has, by the name a DSN gives them
// (default_query_exec_mode=…).
var execModes = map[string]pgx.QueryExecMode{
	"cache_statement": pgx.QueryExecModeCacheStatement,
	"cache_describe":  pgx.QueryExecModeCacheDescribe,
	"describe_exec":   pgx.QueryExecModeDescribeExec,
	"exec":            pgx.QueryExecModeExec,
	"simple_protocol": pgx.QueryExecModeSimpleProtocol,
}

// TestEveryQueryExecMode runs the operations a service and the console rely
// on in each of pgx's query exec modes, directly against PostgreSQL: a
// service may pick any of them (the DSN's default_query_exec_mode), and the
// text-format modes encode arguments differently from the default.
func TestEveryQueryExecMode(t *testing.T) {
	t.Parallel()
	for name := range execModes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := poolInMode(t, testdb.DSN(t), name)
			exerciseOperations(t, pool, pool.Config().ConnConfig)
		})
	}
}

// poolInMode opens a pool of 8 connections on dsn whose statements run in
// the exec mode named mode, chosen the way a service chooses it: in the DSN.
// It fails the test unless pgx took the mode from there, so each mode's test
// runs in that mode.
func poolInMode(t *testing.T, dsn, mode string) *pgxpool.Pool {
	t.Helper()
	dsn = testdb.WithParam(dsn, "default_query_exec_mode", mode)
	pool := testdb.Pool(t, testdb.WithParam(dsn, "pool_max_conns", "8"))
	if got, want := pool.Config().ConnConfig.DefaultQueryExecMode, execModes[mode]; got != want {
		t.Fatalf("pool for default_query_exec_mode=%s runs in mode %v, want %v", mode, got, want)
	}
	return pool
}

// exerciseOperations runs each lock operation once on db and checks its
// outcome: grant, renewal by acquire, refusal, renew, fence, a stale write
// report, release, steal, force-expire, force-release, a waiter woken by a
// release (LISTEN on a connection from listenCfg), prune, and the console's
// reads of rows, metadata, events and waiters.
func exerciseOperations(t *testing.T, db *pgxpool.Pool, listenCfg *pgx.ConnConfig) {
	ctx := context.Background()
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, LogGrants: true,
		Metadata: map[string]any{"purpose": "exec modes"}})

	a := testdb.MustAcquire(t, lk, db, "k", "a")
	if a.Outcome != locker.Acquired {
		t.Fatalf("first acquire: %+v", a)
	}
	again := testdb.MustAcquire(t, lk, db, "k", "a")
	if again.Outcome != locker.Renewed || again.Token != a.Token {
		t.Fatalf("acquire by the holder = %+v, want renewed with token %d", again, a.Token)
	}
	var held *locker.Error
	if _, err := testdb.Try(ctx, lk, db, "k", "b"); !errors.As(err, &held) || held.Owner != "a" || held.Remaining <= 0 {
		t.Fatalf("acquire by another owner = %v, want held by a with time left", err)
	}
	renewed, err := testdb.One(lk.Renew(ctx, db, a))
	if err != nil || !renewed.ExpiresAt.After(a.ExpiresAt) {
		t.Fatalf("renew = %+v, %v; want a later expiry than %s", renewed, err, a.ExpiresAt)
	}
	if err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, a) }); err != nil {
		t.Fatalf("fence of the current lease: %v", err)
	}
	if err := lk.ReportStaleWrite(ctx, db, a, "ledger"); err != nil {
		t.Fatalf("report stale write: %v", err)
	}
	info, found, err := store.Get[lockdb.LockInfo](ctx, db, "k")
	if err != nil || !found || info.Owner != "a" || info.Metadata["purpose"] != "exec modes" {
		t.Fatalf("get = %+v, %v, %v; want a's row with its metadata", info, found, err)
	}
	if rel, err := testdb.One(lk.Release(ctx, db, a)); err != nil || rel.Outcome != locker.Released {
		t.Fatalf("release = %+v, %v", rel, err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, a)); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second release = %v, want ErrNotHeld", err)
	}

	// A steal of a lapsed lease.
	lapsed := testdb.MustAcquire(t, lk, db, "steal", "a")
	testdb.ExpireLease(t, db, "steal")
	stolen := testdb.MustAcquire(t, lk, db, "steal", "b")
	if stolen.Outcome != locker.Stolen || stolen.Token <= lapsed.Token {
		t.Fatalf("acquire of a lapsed lease = %+v, want stolen with a token above %d", stolen, lapsed.Token)
	}
	if err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return locker.Fence(ctx, tx, lapsed) }); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("fence of the stolen lease = %v, want ErrNotHeld", err)
	}

	// Operator actions.
	if f, err := (operator.Operator{}).ForceExpire(ctx, db, "steal", stolen.Token); err != nil || f.Outcome != operator.Expired {
		t.Fatalf("force-expire = %+v, %v", f, err)
	}
	fr := testdb.MustAcquire(t, lk, db, "force", "a")
	if f, err := (operator.Operator{}).ForceRelease(ctx, db, "force", fr.Token); err != nil || f.Outcome != operator.ForceReleased {
		t.Fatalf("force-release = %+v, %v", f, err)
	}
	if _, err := (operator.Operator{}).ForceRelease(ctx, db, "force", fr.Token); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second force-release = %v, want ErrNotHeld", err)
	}

	// A waiter woken by the release, not by a recheck.
	n := workload.StartNotifier(t, listenCfg)
	waiting := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: n, WaitRecheck: time.Minute})
	if r := handOff(t, lk, waiting, db, "wait"); r.Err != nil || r.Lease.Owner != "b" {
		t.Fatalf("waiting acquire = %+v, %v; want b's lease", r.Lease, r.Err)
	}

	exerciseSession(t, db)

	// What the console reads.
	evs, err := lockview.KeyEvents(ctx, db, "k", 100)
	if err != nil || len(evs) < 3 {
		t.Fatalf("events of k = %d, %v; want the grant, the stale write and the release", len(evs), err)
	}
	for _, sort := range lockview.Sorts {
		page, err := lockview.ListLocks(ctx, db, lockview.ListQuery{Sort: sort, After: 10})
		if err != nil || page.Matching != 6 || len(page.Rows) != 6 {
			t.Fatalf("list by %s: %d of %d rows, %v; want 6 locks", sort, len(page.Rows), page.Matching, err)
		}
	}
	if all, err := lockview.ListPrefix(ctx, db, ""); err != nil || len(all) != 6 {
		t.Fatalf("list all = %d rows, %v; want 6", len(all), err)
	}
	if recent, err := lockview.RecentEvents(ctx, db, 0, 100); err != nil || len(recent) < len(evs) {
		t.Fatalf("recent events = %d, %v; want at least k's %d", len(recent), err, len(evs))
	}
	if rates, err := lockview.GrantRates(ctx, db, time.Minute, 10*time.Second); err != nil || lockview.Sum(rates.Grants) == 0 {
		t.Fatalf("grant rates = %+v, %v; want the grants just made", rates, err)
	}
	if caps, err := store.Capabilities(ctx, db); err != nil || !caps.Hold {
		t.Fatalf("capabilities = %+v, %v; want the owner able to hold locks", caps, err)
	}
	if _, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{}); err != nil {
		t.Fatalf("prune: %v", err)
	}
}

// exerciseSession keeps two leases with a session past their TTL, through
// the same connections: the session's open, binding, heartbeats and close
// are statements like any other, so a transaction pooler passes them.
func exerciseSession(t *testing.T, db *pgxpool.Pool) {
	ctx := context.Background()
	const ttl = time.Second
	lk := testdb.Locker(t, locker.Config{TTL: ttl, RenewEvery: 150 * time.Millisecond})
	s, err := lk.OpenSession(ctx, db, "a")
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	leases, err := lk.Acquire(ctx, db, locker.Request{Keys: locker.Keys([]string{"session-1", "session-2"}...), Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ka := s.Keepalive(ctx, leases...)
	// Past the grants by a TTL on the database's clock: what holds them
	// then is the session's heartbeats alone.
	testdb.WaitUntilPast(t, db, leases[len(leases)-1].ExpiresAt.Add(ttl))
	if context.Cause(ka.Context()) != nil || s.Err() != nil {
		t.Fatalf("a TTL past the grants: keepalive %v, session %v; want both kept", context.Cause(ka.Context()), s.Err())
	}
	for _, key := range []string{"session-1", "session-2"} {
		if _, err := testdb.Try(ctx, lk, db, key, "b"); !errors.Is(err, locker.ErrHeld) {
			t.Fatalf("%s a TTL past its grant: %v; want still held by the session", key, err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close session: %v", err)
	}
	if got := testdb.MustAcquire(t, lk, db, "session-1", "b"); got.Outcome != locker.Acquired {
		t.Fatalf("session-1 after Close: %+v; want a free key acquired", got)
	}
}
