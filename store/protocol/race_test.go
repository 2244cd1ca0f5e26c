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

// whileLocked makes the call while another transaction has run lockSQL
// ($1 the key, then args): holding a row, slot, record or advisory lock,
// or having inserted or changed a row. With waits the call must wait for
// that transaction, which then commits; without, it must complete
// meanwhile, and the transaction rolls back.
func whileLocked(lockSQL string, waits bool, args ...any) during {
	return func(t *testing.T, db *pgxpool.Pool, key string, call func()) {
		t.Helper()
		ctx := context.Background()
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, lockSQL, append([]any{key}, args...)...); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		if !waits {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("the call waited for a transaction it need not wait for")
				_ = tx.Rollback(ctx)
				<-done
			}
			return
		}
		pid := int32(tx.Conn().PgConn().PID())
		returned := false
		testdb.Eventually(t, 10*time.Second, "the call waiting for the other transaction", func() bool {
			select {
			case <-done: // it cannot wait any more: say so now
				returned = true
				return true
			default:
			}
			var blocked bool
			if err := db.QueryRow(ctx, blockedBySQL, pid).Scan(&blocked); err != nil {
				t.Fatal(err)
			}
			return blocked
		})
		if returned {
			t.Fatal("the call returned without waiting for the other transaction")
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		<-done
	}
}

const blockedBySQL = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)))`

var (
	// whileRowLocked: another transaction holds the key's row locked
	// (changing it, say); the call does not wait for it.
	whileRowLocked = whileLocked(`SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = 0 FOR UPDATE`, false)
	// whileRowShared: another transaction holds the key's row FOR SHARE (an
	// enqueue beside it, a holder's grant); a call that takes the row only
	// for share completes meanwhile.
	whileRowShared = whileLocked(`SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = 0 FOR SHARE`, false)
	// whileFirstGrantCommits: on a key with no row, another transaction's
	// first grant is inserting it; the call waits for that insert, which
	// then commits, granting the key to other.
	whileFirstGrantCommits = whileLocked(insertLockSQL, true, other, time.Minute.Microseconds(), time.Minute.Microseconds(),
		0, 0, "acquired", "{}", 0, nil, 0, 0, "exclusive", 0, "", 0)
)

// whileRowChanges: another transaction changes the key's row by change
// (an UPDATE of it, $1 the key) and commits; the call looked at the row
// before the change, and waits for it.
func whileRowChanges(change string) during { return whileLocked(change, true) }

// Locks whileLocked takes: slot 1 of the key's holders (its lease being
// renewed), the record of the key's first waiter (refreshed by its
// heartbeat, FOR NO KEY UPDATE; or being served by a release beside
// others, FOR UPDATE), the key's queue lock shared (an enqueue beside a
// running group) or exclusively (a release that found nobody).
const (
	lockFirstSlotSQL      = `SELECT FROM distributed_lock WHERE lock_key = $1 AND slot = 1 FOR NO KEY UPDATE`
	lockFirstWaiterSQL    = `SELECT FROM distributed_lock_waiter WHERE waiter_id = (SELECT min(waiter_id) FROM distributed_lock_waiter WHERE lock_key = $1) FOR NO KEY UPDATE`
	serveFirstWaiterSQL   = `SELECT FROM distributed_lock_waiter WHERE waiter_id = (SELECT min(waiter_id) FROM distributed_lock_waiter WHERE lock_key = $1) FOR UPDATE`
	lockQueueSharedSQL    = `SELECT distributed_lock_try_queue_lock($1)`
	lockQueueExclusiveSQL = `SELECT distributed_lock_queue_lock($1, true, interval '5 seconds')`
)
