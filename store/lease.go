package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// LeaseRef names one grant: the key, its owner and the token of the grant.
// Renewal, release and the fence match all three, so a restarted process that
// reuses an owner id cannot touch its successor's lease.
type LeaseRef struct {
	Key   string
	Owner string
	Token int64
}

// renewSQL extends a lease that is still current and unexpired. An expired
// lease is not revived even if nobody took it: its holder may already have
// been told it was lost.
const renewSQL = `
WITH renewed AS (
    UPDATE distributed_lock l
    SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond',
        ttl = $4::bigint * interval '1 microsecond',
        renewed_at = clock_timestamp(),
        renew_count = l.renew_count + 1
    WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3
      AND l.released_at IS NULL AND l.expires_at > clock_timestamp()
    RETURNING l.*
)
SELECT ` + lockColumns + `
FROM renewed l, (SELECT clock_timestamp() AS ts) c`

// Renew extends ref's lease by ttl from the database's now. ok is false when
// ref is no longer the current, unexpired grant.
func Renew(ctx context.Context, db DBTX, ref LeaseRef, ttl time.Duration) (Lock, bool, error) {
	return oneLock(db.Query(ctx, renewSQL, ref.Key, ref.Owner, ref.Token, ttl.Microseconds()))
}

// releaseSQL marks the row free and keeps it (see grantSQL). It sets only
// released_at, which no index covers, so the update can be HOT (no index
// writes); expires_at keeps the old lease's expiry. It wakes
// waiters with NOTIFY only when some are registered: a NOTIFY serialises the
// commits of every notifying transaction in the cluster, a cost releases
// nobody waits for should not pay. distributed_lock_has_waiters reads with a
// fresh snapshot after the row is locked, so a waiter that registered while
// this statement waited for the row is still seen.
const releaseSQL = `
WITH released AS (
    UPDATE distributed_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3 AND l.released_at IS NULL
    RETURNING l.*
), logged AS (
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor)
    SELECT r.lock_key, 'released', r.owner_id, r.fence_token, $4 FROM released r
)
SELECT ` + lockColumns + `
FROM released l, (SELECT clock_timestamp() AS ts) c,
     LATERAL (SELECT CASE WHEN distributed_lock_has_waiters(l.lock_key)
                          THEN pg_notify('` + NotifyChannel + `', l.lock_key) END) n`

// NotifyChannel is the LISTEN channel on which releases and operator actions
// announce a key that waiters may now take; the payload is the key.
const NotifyChannel = "distributed_lock"

// Release frees ref's lease. ok is false when ref is not the current grant or
// the lock was already released.
func Release(ctx context.Context, db DBTX, ref LeaseRef, actor string) (Lock, bool, error) {
	return oneLock(db.Query(ctx, releaseSQL, ref.Key, ref.Owner, ref.Token, actor))
}

// fenceSQL proves a lease inside the caller's transaction. FOR SHARE keeps
// the row locked until that transaction ends, and every take-over must lock
// the row for update, so no other owner can be granted the key before the
// caller's guarded writes commit or roll back.
const fenceSQL = `
SELECT l.fence_token FROM distributed_lock l
WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3
  AND l.released_at IS NULL AND l.expires_at > clock_timestamp()
FOR SHARE`

// Fence reports whether ref is still the current, unexpired grant, and if so
// keeps it so until db's transaction ends.
func Fence(ctx context.Context, db DBTX, ref LeaseRef) (bool, error) {
	var token int64
	err := db.QueryRow(ctx, fenceSQL, ref.Key, ref.Owner, ref.Token).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, Interpret(err)
	}
	return true, nil
}

func oneLock(rows pgx.Rows, err error) (Lock, bool, error) {
	if err != nil {
		return Lock{}, false, Interpret(err)
	}
	l, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Lock])
	if errors.Is(err, pgx.ErrNoRows) {
		return Lock{}, false, nil
	}
	if err != nil {
		return Lock{}, false, Interpret(err)
	}
	return l, true, nil
}
