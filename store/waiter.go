package store

import (
	"context"
	"time"
)

const addWaiterSQL = `
INSERT INTO distributed_lock_waiter (lock_key, owner_id, seen_until)
VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond')
RETURNING waiter_id`

// wakeMeSQL asks releases of key to NOTIFY for at least the next seenFor/2
// (see wakeWaitersSQL). It writes only when the row's wake_until would run
// out sooner, so waiters that refresh together do not all rewrite the row.
// The UPDATE takes the row lock: if a release holds it, this waits for the
// release to commit, and the waiter's next attempt then sees the key free.
const wakeMeSQL = `
UPDATE distributed_lock l SET wake_until = clock_timestamp() + $2::bigint * interval '1 microsecond'
WHERE l.lock_key = $1
  AND (l.wake_until IS NULL OR l.wake_until < clock_timestamp() + $2::bigint * interval '1 microsecond' / 2)`

// AddWaiter records that owner waits for key, visible for seenFor unless
// refreshed, asks releases of key to wake it, and returns the record's id.
// The record is written first, in its own statement, so the console shows
// the waiter even while the second statement waits for the key's row lock.
func AddWaiter(ctx context.Context, db DBTX, key, owner string, seenFor time.Duration) (int64, error) {
	var id int64
	if err := db.QueryRow(ctx, addWaiterSQL, key, owner, seenFor.Microseconds()).Scan(&id); err != nil {
		return 0, Interpret(err)
	}
	if _, err := db.Exec(ctx, wakeMeSQL, key, seenFor.Microseconds()); err != nil {
		return id, Interpret(err)
	}
	return id, nil
}

const refreshWaiterSQL = `
UPDATE distributed_lock_waiter SET seen_until = clock_timestamp() + $2::bigint * interval '1 microsecond'
WHERE waiter_id = $1`

// RefreshWaiter keeps the waiter record id of key visible, and releases of
// key waking it, for another seenFor.
func RefreshWaiter(ctx context.Context, db DBTX, id int64, key string, seenFor time.Duration) error {
	if _, err := db.Exec(ctx, refreshWaiterSQL, id, seenFor.Microseconds()); err != nil {
		return Interpret(err)
	}
	_, err := db.Exec(ctx, wakeMeSQL, key, seenFor.Microseconds())
	return Interpret(err)
}

const removeWaiterSQL = `DELETE FROM distributed_lock_waiter WHERE waiter_id = $1`

// RemoveWaiter deletes a waiter record.
func RemoveWaiter(ctx context.Context, db DBTX, id int64) error {
	_, err := db.Exec(ctx, removeWaiterSQL, id)
	return Interpret(err)
}
