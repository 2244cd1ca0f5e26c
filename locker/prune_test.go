package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/operator"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

func TestPruneKeepsTokensGrowing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	first := testdb.MustAcquire(t, lk, db, "k", "a")
	if _, err := testdb.One(lk.Release(ctx, db, first)); err != nil {
		t.Fatal(err)
	}
	testdb.MustAcquire(t, lk, db, "expired", "a") // expires, never released
	testdb.ExpireLease(t, db, "expired")
	held := testdb.MustAcquire(t, lk, db, "held", "a")
	// Free for a second: the released row by then, the expired one since.
	testdb.AgeLock(t, db, "k", time.Second)
	testdb.AgeLock(t, db, "expired", time.Second)

	res, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{FreeFor: time.Second / 2})
	if err != nil || res.Locks != 2 {
		t.Fatalf("prune = %+v, %v; want the released and the expired row deleted", res, err)
	}
	for _, key := range []string{"k", "expired"} {
		if _, found, _ := store.Get[lockdb.LockInfo](ctx, db, key); found {
			t.Fatalf("%q still has a row after prune", key)
		}
	}
	if row := rowOf(t, db, "held"); row.Token != held.Token {
		t.Fatalf("prune touched a held lock: %+v", row)
	}
	next := testdb.MustAcquire(t, lk, db, "k", "b")
	if next.Outcome != locker.Acquired || next.Token <= first.Token {
		t.Fatalf("acquire after prune = %+v; want acquired with a token above %d", next, first.Token)
	}
}

// A grant inside an open caller transaction holds the prune gate: prune
// gives up after GateWait with ErrLockTimeout and deletes nothing.
func TestPruneTimesOutBehindAnOpenGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	free := testdb.MustAcquire(t, lk, db, "free", "a")
	if _, err := testdb.One(lk.Release(ctx, db, free)); err != nil {
		t.Fatal(err)
	}
	testdb.AgeLock(t, db, "free", time.Second)

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := testdb.Try(ctx, lk, tx, "busy", "x"); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	res, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{FreeFor: time.Millisecond, GateWait: 200 * time.Millisecond})
	if !errors.Is(err, lockdb.ErrLockTimeout) {
		t.Fatalf("prune behind an open grant = %+v, %v; want ErrLockTimeout", res, err)
	}
	if waited := time.Since(started); waited < 150*time.Millisecond {
		t.Fatalf("prune gave up after %s; want it to wait about GateWait (200ms)", waited)
	}
	if _, found, _ := store.Get[lockdb.LockInfo](ctx, db, "free"); !found {
		t.Fatal("a timed-out prune deleted a row")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{FreeFor: time.Millisecond}); err != nil || res.Locks != 1 {
		t.Fatalf("prune after the transaction ended = %+v, %v; want 1 row", res, err)
	}
	if _, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{FreeFor: -time.Second}); err == nil {
		t.Fatal("prune with a negative FreeFor succeeded")
	}
}

// TestPruneDoesNotDeadlockAWaitingSet: a waiting set locks its keys' rows in
// key order and gives a key without a row a free one under the prune gate
// (taken shared). A prune holds the gate exclusively while it deletes free
// rows; had it waited there for a row the set had locked, each would wait
// for the other and PostgreSQL would fail one of them (40P01). A gate held
// by someone else lines the two up that way: the prune queues for the gate
// first, the set locks "a" and queues for the gate behind it.
func TestPruneDoesNotDeadlockAWaitingSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.WithParam(testdb.DSN(t), "application_name", "prune-vs-set")
	db := testdb.Pool(t, dsn)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})
	free := testdb.MustAcquire(t, lk, db, "a", "x")
	if _, err := testdb.One(lk.Release(ctx, db, free)); err != nil {
		t.Fatal(err)
	}
	testdb.AgeLock(t, db, "a", time.Second) // "b" has no row

	gate, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Rollback(ctx)
	if _, err := gate.Exec(ctx, `LOCK TABLE distributed_lock_prune_gate IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	waiting := func(call string) func() bool {
		return func() bool {
			var n int
			err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE application_name = 'prune-vs-set' AND wait_event = 'relation' AND query LIKE '%' || $1 || '(%'`, call).Scan(&n)
			return err == nil && n > 0
		}
	}
	pruned := make(chan error, 1)
	go func() {
		_, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{FreeFor: time.Second / 2})
		pruned <- err
	}()
	testdb.Eventually(t, 10*time.Second, "the prune queued for the gate", waiting("distributed_lock_prune"))
	granted := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := lk.Acquire(actx, db, locker.Request{Keys: locker.Keys([]string{"a", "b"}...), Owner: "s", Wait: locker.WaitForever})
		granted <- err
	}()
	testdb.Eventually(t, 10*time.Second, "the set queued for the gate", waiting("distributed_lock_enqueue_all"))
	if err := gate.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-pruned; err != nil {
		t.Errorf("prune: %v", err)
	}
	if err := <-granted; err != nil {
		t.Errorf("AcquireAll of a and b: %v", err)
	}
}

// TestPruneKeepsAKeyPromisedToAWaitingSet: a waiting set keeps a key it
// heads free, promised to it, for as long as another of its keys is held.
// A prune that deleted that row, free for longer than FreeFor, would leave
// the set queued on a key without a row, which no hand-off can grant: the
// set would wait for ever, and keep the held key promised once released.
func TestPruneKeepsAKeyPromisedToAWaitingSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute})

	held := testdb.MustAcquire(t, lk, db, "b", "holder")
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	type result struct {
		leases []locker.Lease
		err    error
	}
	done := make(chan result, 1)
	go func() {
		leases, err := lk.Acquire(actx, db, locker.Request{Keys: locker.Keys([]string{"a", "b"}...), Owner: "set", Wait: locker.WaitForever})
		done <- result{leases, err}
	}()
	testdb.WaitForWaiter(t, db, "a", "set")
	testdb.WaitForWaiter(t, db, "b", "set")
	testdb.AgeLock(t, db, "a", time.Hour)
	if _, err := (operator.Operator{}).Prune(ctx, db, operator.PruneOptions{FreeFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.One(lk.Release(ctx, db, held)); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("AcquireAll after a prune and the release of its held key: %v; want both keys", r.err)
	}
	if err := testdb.ErrOf(lk.Release(ctx, db, r.leases...)); err != nil {
		t.Fatal(err)
	}
}
