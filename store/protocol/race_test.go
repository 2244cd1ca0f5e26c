package protocol_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/testdb"
)

// A case's during makes the call while another transaction is at a given
// point; call must be called once.
type during func(t *testing.T, db *pgxpool.Pool, key string, call func())

// whileRowLocked makes the call while another transaction holds the key's
// row locked (changing it, say): it is not waited for.
func whileRowLocked(t *testing.T, db *pgxpool.Pool, key string, call func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT FROM distributed_lock WHERE lock_key = $1 FOR UPDATE`, key); err != nil {
		t.Fatal(err)
	}
	call()
}

const blockedBySQL = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)))`

// whileFirstGrantCommits makes the call on a key with no row while another
// transaction's first grant of it is inserting the row: the call waits for
// that insert, which then commits, granting the key to other.
func whileFirstGrantCommits(t *testing.T, db *pgxpool.Pool, key string, call func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, insertLockSQL, key, other, time.Minute.Microseconds(), time.Minute.Microseconds(),
		0, 0, "acquired", "{}", 0, nil, 0, 0, "exclusive", 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); call() }()
	pid := int32(tx.Conn().PgConn().PID())
	testdb.Eventually(t, 10*time.Second, "the call waiting for the first grant's insert", func() bool {
		var blocked bool
		if err := db.QueryRow(ctx, blockedBySQL, pid).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
		return blocked
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
}

// whileRowShared makes the call while another transaction holds the key's
// row FOR SHARE (an enqueue beside it, a holder's grant): a call that takes
// the row only for share completes meanwhile; one that takes it for
// update would wait, and fails the case.
func whileRowShared(t *testing.T, db *pgxpool.Pool, key string, call func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT FROM distributed_lock WHERE lock_key = $1 FOR SHARE`, key); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); call() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the call waited for a transaction that holds the row only for share")
		_ = tx.Rollback(ctx)
		<-done
	}
}

// whileRowChanges makes the call while another transaction changes the
// key's row by change (an UPDATE of it, $1 the key) and commits: the call
// looks at the row before the change and waits for it.
func whileRowChanges(change string) during {
	return func(t *testing.T, db *pgxpool.Pool, key string, call func()) {
		t.Helper()
		ctx := context.Background()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, change, key); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		pid := int32(tx.Conn().PgConn().PID())
		testdb.Eventually(t, 10*time.Second, "the call waiting for the row's change", func() bool {
			var blocked bool
			if err := db.QueryRow(ctx, blockedBySQL, pid).Scan(&blocked); err != nil {
				t.Fatal(err)
			}
			return blocked
		})
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		<-done
	}
}

// whileLocked makes the call while another transaction holds what lockSQL
// ($1 the key) locks: a holder's slot being renewed, a waiter's record
// being served, the key's queue lock. With waits the call must wait for
// that transaction, which then commits; without, it must complete
// meanwhile.
func whileLocked(lockSQL string, waits bool) during {
	return func(t *testing.T, db *pgxpool.Pool, key string, call func()) {
		t.Helper()
		ctx := context.Background()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, lockSQL, key); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		if !waits {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("the call waited for a lock it needs not wait for")
				_ = tx.Rollback(ctx)
				<-done
			}
			return
		}
		pid := int32(tx.Conn().PgConn().PID())
		testdb.Eventually(t, 10*time.Second, "the call waiting for the lock", func() bool {
			var blocked bool
			if err := db.QueryRow(ctx, blockedBySQL, pid).Scan(&blocked); err != nil {
				t.Fatal(err)
			}
			return blocked
		})
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		<-done
	}
}

// Locks whileLocked takes: slot 1 of the key's holders (its lease being
// renewed), the record of the key's first waiter (being served), the key's
// queue lock shared (an enqueue beside a running group).
const (
	lockFirstSlotSQL   = `SELECT FROM distributed_lock_holder WHERE lock_key = $1 AND slot = 1 FOR NO KEY UPDATE`
	lockFirstWaiterSQL = `SELECT FROM distributed_lock_waiter WHERE waiter_id = (SELECT min(waiter_id) FROM distributed_lock_waiter WHERE lock_key = $1) FOR UPDATE`
	lockQueueSharedSQL = `SELECT distributed_lock_queue_lock($1, false)`
)
