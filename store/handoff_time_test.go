package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/store"
)

// A release that found nobody to hand the key to waits for the enqueues in
// flight (the key's queue lock), then hands the key to whoever they queued.
// The lease it hands starts when it is handed, not when the release began:
// a waiter that queued after that would otherwise be handed a lease shorter
// than its claim window, counted from before it asked.
func TestHandOffAfterWaitingForAnEnqueueStartsWhenHanded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	params := func(owner string) store.QueueParams {
		return store.QueueParams{
			GrantParams: store.GrantParams{Key: "job", Owner: owner, TTL: time.Minute, Actor: owner},
			ClaimWindow: 5 * time.Second, SeenFor: 30 * time.Second,
		}
	}
	held, found, err := store.Enqueue(ctx, db, params("holder"))
	if err != nil || !found || !held.Granted() {
		t.Fatalf("holder: %+v, %v, %v; want granted", held, found, err)
	}
	// A waiter that came and went leaves the release handing off.
	gone, found, err := store.Enqueue(ctx, db, params("gone"))
	if err != nil || !found || gone.Outcome != lockdb.OutcomeQueued {
		t.Fatalf("waiter: %+v, %v, %v; want queued", gone, found, err)
	}
	if _, err := db.Exec(ctx, `SELECT distributed_lock_waiter_leave('job', $1)`, gone.WaiterID); err != nil {
		t.Fatal(err)
	}

	// An enqueue beside the holder, in flight: it holds the queue lock.
	enqueue, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = enqueue.Rollback(ctx) }()
	var outcome string
	if err := enqueue.QueryRow(ctx, `SELECT outcome FROM distributed_lock_enqueue('job', 'next', $1, $2, $3)`,
		time.Minute.Microseconds(), (5 * time.Second).Microseconds(), (30 * time.Second).Microseconds()).Scan(&outcome); err != nil || outcome != lockdb.OutcomeQueued {
		t.Fatalf("enqueue: %q, %v; want queued", outcome, err)
	}
	release, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release.Release()
	released := make(chan error, 1)
	go func() {
		_, err := release.Exec(ctx, `SELECT distributed_lock_release('job', 'holder', $1)`, held.Token)
		released <- err
	}()
	testdb.WaitUntilBlocked(t, db, release.Conn().PgConn().PID()) // for the queue lock
	time.Sleep(300 * time.Millisecond)
	var queuedAt time.Time
	if err := enqueue.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&queuedAt); err != nil {
		t.Fatal(err)
	}
	if err := enqueue.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("release: %v", err)
	}
	var owner string
	var expires time.Time
	if err := db.QueryRow(ctx, `SELECT owner_id, expires_at FROM distributed_lock WHERE lock_key = 'job'`).Scan(&owner, &expires); err != nil {
		t.Fatal(err)
	}
	if owner != "next" {
		t.Fatalf("the key went to %q, want next", owner)
	}
	if earliest := queuedAt.Add(5 * time.Second); expires.Before(earliest) {
		t.Errorf("the handed lease ends at %s, %s before its claim window counted from the commit of its enqueue",
			expires.Format(time.RFC3339Nano), earliest.Sub(expires))
	}
}

// A release beside a semaphore's other holders that waits for the record
// it serves (locked for a moment by its process's heartbeat) hands the
// permit when it has the record: the lease starts then.
func TestPermitHandedAfterWaitingForTheRecordStartsWhenHanded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	params := func(owner string) store.QueueParams {
		return store.QueueParams{
			GrantParams: store.GrantParams{Key: "pool", Owner: owner, TTL: time.Minute, Actor: owner},
			ClaimWindow: 5 * time.Second, SeenFor: 30 * time.Second, Permits: 2,
		}
	}
	var tokens []int64
	for _, owner := range []string{"h1", "h2"} {
		q, found, err := store.Enqueue(ctx, db, params(owner))
		if err != nil || !found || !q.Granted() {
			t.Fatalf("holder %s: %+v, %v, %v; want granted", owner, q, found, err)
		}
		tokens = append(tokens, q.Token)
	}
	w, found, err := store.Enqueue(ctx, db, params("next"))
	if err != nil || !found || w.Outcome != lockdb.OutcomeQueued {
		t.Fatalf("waiter: %+v, %v, %v; want queued", w, found, err)
	}
	heartbeat, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = heartbeat.Rollback(ctx) }()
	if _, err := heartbeat.Exec(ctx, `SELECT FROM distributed_lock_waiter WHERE waiter_id = $1 FOR UPDATE`, w.WaiterID); err != nil {
		t.Fatal(err)
	}
	release, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release.Release()
	released := make(chan error, 1)
	go func() {
		_, err := release.Exec(ctx, `SELECT distributed_lock_release('pool', 'h1', $1)`, tokens[0])
		released <- err
	}()
	testdb.WaitUntilBlocked(t, db, release.Conn().PgConn().PID()) // for the record
	time.Sleep(300 * time.Millisecond)
	var freedAt time.Time
	if err := heartbeat.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&freedAt); err != nil {
		t.Fatal(err)
	}
	if err := heartbeat.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("release: %v", err)
	}
	var expires time.Time
	if err := db.QueryRow(ctx, `SELECT expires_at FROM distributed_lock_holder
		WHERE lock_key = 'pool' AND owner_id = 'next' AND released_at IS NULL`).Scan(&expires); err != nil {
		t.Fatalf("the waiter's slot: %v", err)
	}
	if earliest := freedAt.Add(5 * time.Second); expires.Before(earliest) {
		t.Errorf("the handed permit ends at %s, %s before its claim window counted from when its record was free",
			expires.Format(time.RFC3339Nano), earliest.Sub(expires))
	}
}
