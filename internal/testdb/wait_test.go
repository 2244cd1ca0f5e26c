package testdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

func TestWaitUntilBlockedSeesARowLockWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	grant(t, db, "k", "a", time.Minute)
	holder, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM distributed_lock WHERE lock_key = 'k' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, `UPDATE distributed_lock SET renew_count = renew_count + 1 WHERE lock_key = 'k'`)
		done <- err
	}()
	testdb.WaitUntilBlocked(t, db, conn.Conn().PgConn().PID())
	select {
	case err := <-done:
		t.Fatalf("the update finished (%v) while the row was locked", err)
	default:
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWaitUntilPastWaitsForTheDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	at := testdb.DBNow(t, db).Add(50 * time.Millisecond)
	testdb.WaitUntilPast(t, db, at)
	var past bool
	if err := db.QueryRow(ctx, `SELECT clock_timestamp() > $1`, at).Scan(&past); err != nil || !past {
		t.Fatalf("after WaitUntilPast the database clock is not past %s (%v)", at, err)
	}
}
