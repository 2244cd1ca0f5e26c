package roles_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/roles"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// What a role with no grant at all can take against the lock schema $1
// (pg_class is everyone's to read): every advisory lock the protocol could
// take on a key it computes, exclusively and for the whole session (the
// prune gate's, each key's queue lock for the lock keys $2, the claim of
// each waiter record of $3, ids it guessed); each key's queue lock shared,
// as an enqueue in flight holds it; and an ACCESS SHARE lock on each of the
// schema's tables by oid, held by the transaction it leaves open.
const (
	strangerAdvisorySQL = `
WITH t AS (SELECT c.relname, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1)
SELECT (SELECT count(pg_advisory_lock(t.oid::int, 0)) FROM t WHERE t.relname = 'distributed_lock'),
       (SELECT count(pg_advisory_lock(t.oid::int, hashtext(k))) FROM t, unnest($2::text[]) k
        WHERE t.relname = 'distributed_lock_waiter'),
       (SELECT count(pg_advisory_lock_shared(t.oid::int, hashtext(k))) FROM t, unnest($2::text[]) k
        WHERE t.relname = 'distributed_lock_waiter'),
       (SELECT count(pg_advisory_lock(t.oid::int, i::int)) FROM t, unnest($3::bigint[]) i
        WHERE t.relname = 'distributed_lock')`
	strangerTableLocksSQL = `
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind = 'r' AND pg_relation_size(c.oid) >= 0`
)

// A role with no grant at all holds every lock it can take on what the
// protocol locks, for as long as it likes. Calls then never wait for it
// longer than their own bounds (each session here gives up a lock wait
// after 3 s): a key's first grant, prune, an enqueue beside a held lease
// or a semaphore's holders, a release that finds nobody to hand the key
// to.
func TestAStrangerHoldsNothingTheProtocolWaitsFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	svc := withLockTimeout(t, e.roleWith(t, roles.Service))
	op := withLockTimeout(t, e.roleWith(t, roles.Operator))
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	// The keys below have rows already: only "new" is granted a first time
	// beside the stranger.
	for _, key := range []string{"gone", "held"} {
		if _, err := testdb.One(lk.Release(ctx, svc, testdb.MustAcquire(t, lk, svc, key, "earlier"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testdb.One(lk.Release(ctx, svc, acquirePermit(t, lk, svc, "earlier"))); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for id := range int64(200) {
		ids = append(ids, id+1)
	}
	holdStrangerLocks(t, e, []string{"gone", "held", "sem"}, ids)

	if _, err := testdb.Try(ctx, lk, svc, "new", "svc"); err != nil {
		t.Errorf("first grant of a key: %v", err)
	}
	if _, err := (operator.Operator{}).Prune(ctx, op, operator.PruneOptions{FreeFor: time.Hour}); err != nil {
		t.Errorf("prune: %v", err)
	}
	// A release that finds nobody to hand the key to waits for the
	// enqueues in flight, on the key's queue lock, which the stranger holds.
	gone := testdb.MustAcquire(t, lk, svc, "gone", "holder")
	q := queueAs(t, svc, store.QueueParams{GrantParams: store.GrantParams{Key: "gone", Owner: "left"}})
	if _, err := store.Leave(ctx, svc, "gone", q.WaiterID, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.One(lk.Release(ctx, svc, gone)); err != nil {
		t.Errorf("release with nobody to hand to: %v", err)
	}
	// Enqueues beside a held lease whose releases hand off.
	testdb.MustAcquire(t, lk, svc, "held", "holder")
	queueAs(t, svc, store.QueueParams{GrantParams: store.GrantParams{Key: "held", Owner: "first"}})
	queueAs(t, svc, store.QueueParams{GrantParams: store.GrantParams{Key: "held", Owner: "beside"}})
	acquirePermit(t, lk, svc, "h1")
	acquirePermit(t, lk, svc, "h2")
	queueAs(t, svc, store.QueueParams{GrantParams: store.GrantParams{Key: "sem", Owner: "first"}, Permits: 2})
	queueAs(t, svc, store.QueueParams{GrantParams: store.GrantParams{Key: "sem", Owner: "beside"}, Permits: 2})
}

// A stranger holding the advisory lock that claimed the first waiter's
// record (its id guessed) makes no release serve a semaphore's waiters out
// of turn: a release beside the other holder serves the first waiter
// first.
func TestAStrangerCannotReorderTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	svc := withLockTimeout(t, e.roleWith(t, roles.Service))
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	if _, err := testdb.One(lk.Release(ctx, svc, acquirePermit(t, lk, svc, "earlier"))); err != nil {
		t.Fatal(err)
	}
	h1 := acquirePermit(t, lk, svc, "h1")
	acquirePermit(t, lk, svc, "h2")
	w1 := queueAs(t, svc, store.QueueParams{GrantParams: store.GrantParams{Key: "sem", Owner: "w1"}, Permits: 2})
	queueAs(t, svc, store.QueueParams{GrantParams: store.GrantParams{Key: "sem", Owner: "w2"}, Permits: 2})
	holdStrangerLocks(t, e, nil, []int64{w1.WaiterID})
	if _, err := testdb.One(lk.Release(ctx, svc, h1)); err != nil {
		t.Fatalf("release beside the semaphore's other holder: %v", err)
	}
	var served string
	if err := e.admin.QueryRow(ctx, `SELECT string_agg(owner_id, ',') FROM distributed_lock
		WHERE lock_key = 'sem' AND slot > 0 AND released_at IS NULL AND handed_to IS NOT NULL`).Scan(&served); err != nil {
		t.Fatal(err)
	}
	if served != "w1" {
		t.Errorf("the freed permit went to %q; want w1, the first waiter", served)
	}
}

// holdStrangerLocks has a new login role with no grant at all take, and
// keep until the test ends, every lock it can against e's lock schema, the
// queue locks of keys and the claims of waiter records ids, and checks
// that LOCK TABLE is refused it.
func holdStrangerLocks(t *testing.T, e env, keys []string, ids []int64) {
	t.Helper()
	ctx := context.Background()
	stranger, err := e.loginRole(t, "lockctl_stranger", nil).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stranger.Release)
	if _, err := stranger.Exec(ctx, strangerAdvisorySQL, e.schema, keys, ids); err != nil {
		t.Fatalf("the stranger's advisory locks: %v", err)
	}
	if _, err := stranger.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := stranger.Exec(ctx, strangerTableLocksSQL, e.schema); err != nil {
		t.Fatalf("the stranger's table locks: %v", err)
	}
	for _, lockTable := range []string{"distributed_lock_prune_gate", "distributed_lock"} {
		_, err := stranger.Exec(ctx, "SAVEPOINT s; LOCK TABLE "+e.schema+"."+lockTable+" IN SHARE MODE")
		wantDenied(t, "the stranger's LOCK TABLE "+lockTable, store.Interpret(err))
		if _, err := stranger.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
			t.Fatal(err)
		}
	}
}

// withLockTimeout is pool, connecting as the same role, giving up any lock
// wait after 3 s: a stall shows as an error, not a hang.
func withLockTimeout(t *testing.T, pool *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "3s"
	bounded, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bounded.Close)
	return bounded
}

// queueAs queues p (a minute's lease, a claim window of 10 s, a record seen
// for 30 s) as db, and wants it queued.
func queueAs(t *testing.T, db *pgxpool.Pool, p store.QueueParams) store.Queued {
	t.Helper()
	p.TTL, p.ClaimWindow, p.SeenFor = time.Minute, 10*time.Second, 30*time.Second
	q, found, err := store.Enqueue(context.Background(), db, p)
	if err != nil || !found || q.Outcome != lockdb.OutcomeQueued {
		t.Fatalf("enqueue %s on %s: %+v, %v, %v; want queued", p.Owner, p.Key, q, found, err)
	}
	return q
}

// acquirePermit takes one of sem's two permits for owner.
func acquirePermit(t *testing.T, lk *locker.Locker, db *pgxpool.Pool, owner string) locker.Lease {
	t.Helper()
	l, err := testdb.One(lk.Acquire(context.Background(), db, locker.Request{Keys: []locker.Key{{Name: "sem", Mode: locker.ModeSemaphore, Permits: 2}}, Owner: owner}))
	if err != nil {
		t.Fatalf("permit for %s: %v", owner, err)
	}
	return l
}

// A role with no grant at all holding lockctl's migrate lock (an advisory
// lock, on a key anyone can compute) makes a migrate fail past its bound,
// naming the session that holds it, rather than wait for it forever.
func TestAStrangerCannotStallMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	stranger, err := e.loginRole(t, "lockctl_stranger", nil).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	role := stranger.Conn().Config().User
	// Let go before the cleanup, and soon: every migrate on the database
	// waits for it, other tests' too.
	defer stranger.Release()
	if _, err := stranger.Exec(ctx, `SELECT pg_advisory_lock(hashtext('lockctl.migrate'))`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = stranger.Exec(ctx, `SELECT pg_advisory_unlock_all()`) }()
	_, err = store.MigrateWith(ctx, e.admin, store.MigrateOptions{LockWait: time.Second})
	if !errors.Is(err, lockdb.ErrLockTimeout) || !strings.Contains(err.Error(), "role "+role) {
		t.Fatalf("migrate beside the stranger's lock: %v; want lockdb.ErrLockTimeout naming role %s", err, role)
	}
}
