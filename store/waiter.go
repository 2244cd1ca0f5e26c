package store

import (
	"context"
	"time"
)

// The waiter bookkeeping functions of schema.sql.
const (
	addWaiterSQL     = `SELECT distributed_lock_waiter_add($1, $2, $3::bigint)`
	watchSQL         = `SELECT distributed_lock_waiter_watch($1, $2::bigint)`
	refreshWaiterSQL = `SELECT distributed_lock_waiter_refresh($1, $2::bigint)`
	removeWaiterSQL  = `SELECT distributed_lock_waiter_remove($1)`
)

// AddWaiter records that owner waits for key, visible for seenFor unless
// refreshed, asks releases of key to wake it (NOTIFY) for at least the next
// seenFor/2, and returns the record's id. The record is written first, in a
// call of its own, so the console shows the waiter even while the second
// call waits for the key's row lock (held by a release, say).
func AddWaiter(ctx context.Context, db DBTX, key, owner string, seenFor time.Duration) (int64, error) {
	var id int64
	if err := db.QueryRow(ctx, addWaiterSQL, key, owner, seenFor.Microseconds()).Scan(&id); err != nil {
		return 0, Interpret(err)
	}
	if _, err := db.Exec(ctx, watchSQL, key, seenFor.Microseconds()); err != nil {
		return id, Interpret(err)
	}
	return id, nil
}

// RefreshWaiter keeps the waiter record id of key visible, and releases of
// key waking it, for another seenFor.
func RefreshWaiter(ctx context.Context, db DBTX, id int64, key string, seenFor time.Duration) error {
	if _, err := db.Exec(ctx, refreshWaiterSQL, id, seenFor.Microseconds()); err != nil {
		return Interpret(err)
	}
	_, err := db.Exec(ctx, watchSQL, key, seenFor.Microseconds())
	return Interpret(err)
}

// RemoveWaiter deletes a waiter record.
func RemoveWaiter(ctx context.Context, db DBTX, id int64) error {
	_, err := db.Exec(ctx, removeWaiterSQL, id)
	return Interpret(err)
}
