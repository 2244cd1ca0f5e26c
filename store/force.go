package store

import (
	"context"
)

// ForceParams is an operator action on the grant the operator saw.
type ForceParams struct {
	Key    string
	Token  int64  // the token the operator saw; the action applies only if it is still current
	Actor  string // who, recorded on the event
	Reason string // optional, recorded on the event
}

// forceExpireSQL ends a lease now without freeing the row: the next acquirer
// takes it over as a steal, with a new token. Matching on the token makes the
// action a no-op if the lock changed hands after the operator looked.
const forceExpireSQL = `
WITH expired AS (
    UPDATE distributed_lock l SET expires_at = least(l.expires_at, clock_timestamp())
    WHERE l.lock_key = $1 AND l.fence_token = $2 AND l.released_at IS NULL
    RETURNING l.*
), logged AS (
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor, detail)
    SELECT e.lock_key, 'force_expired', e.owner_id, e.fence_token, $3,
           jsonb_strip_nulls(jsonb_build_object('reason', $4::text))
    FROM expired e
)
SELECT ` + LockColumns + `
FROM expired l, (SELECT clock_timestamp() AS ts) c,
     LATERAL (SELECT ` + wakeWaitersSQL + `) n`

// ForceExpire expires the grant p.Token of p.Key. ok is false when that
// token is no longer the current, unreleased grant.
func ForceExpire(ctx context.Context, db DBTX, p ForceParams) (Lock, bool, error) {
	return oneLock(db.Query(ctx, forceExpireSQL, p.Key, p.Token, p.Actor, nullIfEmpty(p.Reason)))
}

// forceReleaseSQL frees the row as if its holder had released it (and, like
// releaseSQL, sets only released_at).
const forceReleaseSQL = `
WITH released AS (
    UPDATE distributed_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = $1 AND l.fence_token = $2 AND l.released_at IS NULL
    RETURNING l.*
), logged AS (
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor, detail)
    SELECT r.lock_key, 'force_released', r.owner_id, r.fence_token, $3,
           jsonb_strip_nulls(jsonb_build_object('reason', $4::text))
    FROM released r
)
SELECT ` + LockColumns + `
FROM released l, (SELECT clock_timestamp() AS ts) c,
     LATERAL (SELECT ` + wakeWaitersSQL + `) n`

// ForceRelease frees the grant p.Token of p.Key. ok is false when that token
// is no longer the current, unreleased grant.
func ForceRelease(ctx context.Context, db DBTX, p ForceParams) (Lock, bool, error) {
	return oneLock(db.Query(ctx, forceReleaseSQL, p.Key, p.Token, p.Actor, nullIfEmpty(p.Reason)))
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
