package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// A semaphore's waiter that only queues commits lazily when it asks to; a
// lazy release that hands its permit straight to a waiter commits durably
// all the same: a hand-off lost in a crash after its NOTIFY went out could
// see its token drawn again.
func TestSemaphoreQueueingIsLazyAndHandOffsDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	enqueue := func(owner string) store.Queued {
		t.Helper()
		q, found, err := store.Enqueue(ctx, db, store.QueueParams{
			GrantParams: store.GrantParams{Key: "pool", Owner: owner, TTL: time.Minute, Actor: owner},
			ClaimWindow: 10 * time.Second, SeenFor: 30 * time.Second, Permits: 2,
		})
		if err != nil || !found {
			t.Fatalf("enqueue %s: %v, %v", owner, found, err)
		}
		return q
	}
	// In a transaction begun by hand, to read its setting before commit.
	inTx := func(name, sql string, args ...any) {
		t.Helper()
		conn, err := db.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		var outcome string
		if err := tx.QueryRow(ctx, sql, args...).Scan(&outcome); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var setting string
		if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{lockdb.OutcomeQueued: "off", lockdb.OutcomeReleased: "on"}[outcome]
		if want == "" || setting != want {
			t.Errorf("%s: outcome %s, synchronous_commit %s; want queued, off, or released, on", name, outcome, setting)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	a, b := enqueue("a"), enqueue("b")
	if !a.Granted() || !b.Granted() {
		t.Fatalf("a %s, b %s; want both granted a permit", a.Outcome, b.Outcome)
	}
	if q := enqueue("c"); q.Outcome != lockdb.OutcomeQueued {
		t.Fatalf("c: %s; want queued", q.Outcome)
	}
	const enqueueSQL = `SELECT outcome FROM distributed_lock_enqueue_shared(key => 'pool', owner => $1,
		ttl_us => 60000000, permits => 2, claim_us => 10000000, seen_for_us => 30000000, lazy_commit => true)`
	inTx("d queues beside c, lazily", enqueueSQL, "d")
	inTx("a's lazy release hands its permit to c", `SELECT outcome FROM distributed_lock_release(key => 'pool',
		owner => 'a', token => $1, lazy_commit => true)`, a.Token)
	var handed string
	if err := db.QueryRow(ctx, `SELECT owner_id FROM distributed_lock WHERE lock_key = 'pool' AND slot > 0 AND handed_to IS NOT NULL`).
		Scan(&handed); err != nil || handed != "c" {
		t.Fatalf("slot handed to %q (%v); want c, the head", handed, err)
	}
}
