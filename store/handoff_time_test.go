package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
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
	clock := testdb.Clock(t, db)
	held := enqueueGranted(t, db, queueParams("job", "holder", 0))
	leaveHandingOff(t, db, queueParams("job", "gone", 0))

	// An enqueue beside the holder, in flight: it holds the queue lock.
	enqueue, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = enqueue.Rollback(ctx) }()
	var outcome string
	if err := enqueue.QueryRow(ctx, `SELECT outcome FROM distributed_lock_enqueue('job', 'next', $1, $2, $3)`,
		time.Minute.Microseconds(), testClaimWindow.Microseconds(), (30 * time.Second).Microseconds()).Scan(&outcome); err != nil || outcome != lockdb.OutcomeQueued {
		t.Fatalf("enqueue: %q, %v; want queued", outcome, err)
	}
	released := testdb.ExecBlocked(t, db, `SELECT distributed_lock_release('job', 'holder', $1)`, held.Token) // for the queue lock
	queuedAt := commitLater(t, clock, enqueue)
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
	if earliest := queuedAt.Add(testClaimWindow); expires.Before(earliest) {
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
	clock := testdb.Clock(t, db)
	first := enqueueGranted(t, db, queueParams("pool", "h1", 2))
	enqueueGranted(t, db, queueParams("pool", "h2", 2))
	w := enqueueQueued(t, db, queueParams("pool", "next", 2))
	heartbeat, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = heartbeat.Rollback(ctx) }()
	if _, err := heartbeat.Exec(ctx, `SELECT FROM distributed_lock_waiter WHERE waiter_id = $1 FOR NO KEY UPDATE`, w.WaiterID); err != nil {
		t.Fatal(err)
	}
	released := testdb.ExecBlocked(t, db, `SELECT distributed_lock_release('pool', 'h1', $1)`, first.Token) // for the record
	freedAt := commitLater(t, clock, heartbeat)
	if err := <-released; err != nil {
		t.Fatalf("release: %v", err)
	}
	var expires time.Time
	if err := db.QueryRow(ctx, `SELECT expires_at FROM distributed_lock
		WHERE lock_key = 'pool' AND slot > 0 AND owner_id = 'next' AND released_at IS NULL`).Scan(&expires); err != nil {
		t.Fatalf("the waiter's slot: %v", err)
	}
	if earliest := freedAt.Add(testClaimWindow); expires.Before(earliest) {
		t.Errorf("the handed permit ends at %s, %s before its claim window counted from when its record was free",
			expires.Format(time.RFC3339Nano), earliest.Sub(expires))
	}
}

// commitLater commits tx 300 ms later on the schema's clock, far enough on
// for a lease counted from before to show it, and returns that clock just
// before.
func commitLater(t *testing.T, clock *testdb.DBClock, tx pgx.Tx) time.Time {
	t.Helper()
	ctx := context.Background()
	clock.Advance(300 * time.Millisecond)
	var at time.Time
	if err := tx.QueryRow(ctx, `SELECT distributed_lock_now()`).Scan(&at); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return at
}
