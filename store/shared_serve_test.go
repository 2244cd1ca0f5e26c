package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// A release beside the others looks for a waiter to serve without locking
// a writer at the head of the queue: left locked until its commit, the
// record deadlocked with a release that waited for the enqueues in flight
// and then for the head.
func TestServingBesideLeavesAWritersRecordUnlocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	shared := func(owner string) store.Queued {
		t.Helper()
		q, found, err := store.Enqueue(ctx, db, store.QueueParams{
			GrantParams: store.GrantParams{Key: "config", Owner: owner, TTL: time.Minute, Actor: owner},
			ClaimWindow: 10 * time.Second, SeenFor: 30 * time.Second, Shared: true,
		})
		if err != nil || !found || !q.Granted() {
			t.Fatalf("reader %s: %+v, %v, %v; want granted", owner, q, found, err)
		}
		return q
	}
	shared("r1")
	shared("r2")
	w, found, err := store.Enqueue(ctx, db, store.QueueParams{
		GrantParams: store.GrantParams{Key: "config", Owner: "writer", TTL: time.Minute, Actor: "writer"},
		ClaimWindow: 10 * time.Second, SeenFor: 30 * time.Second,
	})
	if err != nil || !found || w.Outcome != lockdb.OutcomeQueued {
		t.Fatalf("writer: %+v, %v, %v; want queued", w, found, err)
	}

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var served *int64
	if err := tx.QueryRow(ctx, `SELECT distributed_lock_serve_beside('config', clock_timestamp())`).Scan(&served); err != nil || served != nil {
		t.Fatalf("served %v, %v; want nobody", served, err)
	}
	var locked bool
	if err := db.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM distributed_lock_waiter
		WHERE waiter_id = $1 FOR UPDATE SKIP LOCKED)`, w.WaiterID).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	if locked {
		t.Error("the writer's record is locked by a look for someone to serve")
	}
}

// A release beside the others that does nothing (not the caller's slot,
// here) keeps no lock on the group's row: its caller then takes the row
// for update, and two callers each keeping it for share deadlocked.
func TestReleaseBesideThatDoesNothingKeepsNoLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, owner := range []string{"a", "b", "c"} {
		q, found, err := store.Enqueue(ctx, db, store.QueueParams{
			GrantParams: store.GrantParams{Key: "pool", Owner: owner, TTL: time.Minute, Actor: owner},
			ClaimWindow: 10 * time.Second, SeenFor: 30 * time.Second, Permits: 2,
		})
		if err != nil || !found {
			t.Fatalf("enqueue %s: %+v, %v, %v", owner, q, found, err)
		}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var slot *int32
	if err := tx.QueryRow(ctx, `SELECT h.slot FROM distributed_lock_release_holder('pool', 'a', 12345, false, NULL) h`).
		Scan(&slot); err != nil || slot != nil {
		t.Fatalf("released slot %v, %v; want nothing released", slot, err)
	}
	var free bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM distributed_lock WHERE lock_key = 'pool'
		FOR NO KEY UPDATE SKIP LOCKED)`).Scan(&free); err != nil {
		t.Fatal(err)
	}
	if !free {
		t.Error("the group's row is still locked by a release beside the others that did nothing")
	}
}

// A release beside the others that found nobody to hand its permit to
// waits for the enqueues in flight (the key's queue lock). Should one of
// them wait in turn for a row the release holds, the two would deadlock;
// the release's wait is bounded instead, and past it the release is undone
// and made again under the group's row for update, and both go through.
func TestReleaseBesideWaitingInACycleEndsItsLeaseUnderTheRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	first := enqueueGranted(t, db, queueParams("pool", "h1", 2))
	enqueueGranted(t, db, queueParams("pool", "h2", 2))
	leaveHandingOff(t, db, queueParams("pool", "w", 2))

	// An enqueue in flight, holding the queue lock.
	enqueue, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = enqueue.Rollback(ctx) }()
	if _, err := enqueue.Exec(ctx, `SELECT distributed_lock_try_queue_lock('pool')`); err != nil {
		t.Fatal(err)
	}
	releasing := testdb.ExecBlocked(t, db, `SELECT distributed_lock_release('pool', 'h1', $1)`, first.Token) // for the queue lock
	// The enqueue now waits for the release's slot: a cycle.
	if _, err := enqueue.Exec(ctx, `SELECT 1 FROM distributed_lock WHERE lock_key = 'pool' AND slot > 0 AND owner_id = 'h1' FOR UPDATE`); err != nil {
		t.Fatalf("the enqueue's wait: %v", err)
	}
	if err := enqueue.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-releasing; err != nil {
		t.Fatalf("release: %v", err)
	}
	var holders int
	var released bool
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE released_at IS NULL AND expires_at > now()),
		       bool_or(owner_id = 'h1' AND fence_token = $1 AND released_at IS NOT NULL)
		FROM distributed_lock WHERE lock_key = 'pool' AND slot > 0`, first.Token).Scan(&holders, &released); err != nil {
		t.Fatal(err)
	}
	if !released || holders != 1 {
		t.Errorf("h1's lease released %v, %d live holders after the release; want released, 1", released, holders)
	}
}
