package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/store"
)

// testClaimWindow is the claim window the queue tests' waiters ask for.
const testClaimWindow = 10 * time.Second

// queueParams asks for key for owner, a lease of a minute: one of permits
// permits, or with permits 0 the key alone.
func queueParams(key, owner string, permits int) store.QueueParams {
	return store.QueueParams{
		GrantParams: store.GrantParams{Key: key, Owner: owner, TTL: time.Minute, Actor: owner},
		ClaimWindow: testClaimWindow, SeenFor: 30 * time.Second, Permits: permits,
	}
}

// enqueueGranted enqueues p and fails the test unless it was granted.
func enqueueGranted(t *testing.T, db store.DBTX, p store.QueueParams) store.Queued {
	t.Helper()
	q, found, err := store.Enqueue(context.Background(), db, p)
	if err != nil || !found || !q.Granted() {
		t.Fatalf("%s on %s: %+v, %v, %v; want granted", p.Owner, p.Key, q, found, err)
	}
	return q
}

// enqueueQueued enqueues p and fails the test unless it was queued.
func enqueueQueued(t *testing.T, db store.DBTX, p store.QueueParams) store.Queued {
	t.Helper()
	q, found, err := store.Enqueue(context.Background(), db, p)
	if err != nil || !found || q.Outcome != lockdb.OutcomeQueued {
		t.Fatalf("%s on %s: %+v, %v, %v; want queued", p.Owner, p.Key, q, found, err)
	}
	return q
}

// leaveHandingOff queues p and takes the record out again: the key's
// releases keep handing off (wake_until) though nobody waits.
func leaveHandingOff(t *testing.T, db store.DBTX, p store.QueueParams) {
	t.Helper()
	q := enqueueQueued(t, db, p)
	if _, err := db.Exec(context.Background(), `SELECT distributed_lock_waiter_leave($1, $2)`, p.Key, q.WaiterID); err != nil {
		t.Fatal(err)
	}
}
