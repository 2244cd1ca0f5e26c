package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
)

// ownerRecordsSQL lists owner's waiter records on a key, in queue order.
const ownerRecordsSQL = `SELECT waiter_id, seen_until FROM distributed_lock_waiter
WHERE lock_key = $1 AND owner_id = $2 ORDER BY waiter_id`

type ownerRecord struct {
	id        int64
	seenUntil time.Time
}

func ownerRecords(t *testing.T, db locker.DBTX, key, owner string) []ownerRecord {
	t.Helper()
	rows, err := db.Query(context.Background(), ownerRecordsSQL, key, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ownerRecord
	for rows.Next() {
		var r ownerRecord
		if err := rows.Scan(&r.id, &r.seenUntil); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A waiter whose connection dies mid-wait (as in a failover) cannot leave
// the queue, so its record stays live. When its owner calls Acquire again,
// that call takes the record over (same id, same place) instead of queueing
// behind it: the release hands the key to the live call, not to a dead
// record whose unclaimed lease would block the key for a claim window.
func TestAcquireAgainAfterBrokenConnectionKeepsOnePlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	lk := testdb.Locker(t, locker.Config{TTL: time.Minute, Notifier: startNotifier(t, db), WaitRecheck: 30 * time.Second})
	holder := testdb.MustAcquire(t, lk, db, "k", "holder")

	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	first := testdb.AcquireAsync(ctx, lk, conn.Conn(), "k", "a")
	dead := testdb.WaitForWaiter(t, db, "k", "a")
	if _, err := db.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	// Wake it, as a release with nobody to hand to would: its check of the
	// queue runs on the dead connection.
	if _, err := db.Exec(ctx, `SELECT distributed_lock_wake('k')`); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.Err == nil || errors.Is(r.Err, locker.ErrQueueLost) {
		t.Fatalf("Acquire on the killed connection = %+v, %v; want it to fail on the connection", r.Lease, r.Err)
	} else {
		t.Logf("first Acquire: %v", r.Err)
	}
	left := ownerRecords(t, db, "k", "a")
	if len(left) != 1 || left[0].id != dead.ID {
		t.Fatalf("records of a after the broken call: %+v; want its record %d left behind", left, dead.ID)
	}

	second := testdb.AcquireAsync(ctx, lk, db, "k", "a")
	testdb.Eventually(t, 10*time.Second, "the second call's enqueue", func() bool {
		now := ownerRecords(t, db, "k", "a")
		return len(now) != 1 || now[0].seenUntil.After(left[0].seenUntil)
	})
	if now := ownerRecords(t, db, "k", "a"); len(now) != 1 || now[0].id != dead.ID {
		t.Fatalf("records of a after it queued again: %+v; want one, the old record %d taken over", now, dead.ID)
	}
	if _, err := testdb.One(lk.Release(ctx, db, holder)); err != nil {
		t.Fatal(err)
	}
	handed := rowOf(t, db, "k")
	r := <-second
	if r.Err != nil || r.Lease.Owner != "a" || r.Lease.Outcome != locker.Acquired || r.Lease.Token != handed.Token {
		t.Fatalf("second Acquire = %+v, %v; want the lease the release handed to a (%+v), not a take-over after it lapsed",
			r.Lease, r.Err, handed)
	}
}
