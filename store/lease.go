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

// LeaseRow is what a grant, renewal or release returns: the columns a lease
// is made of, and nothing else (every column decoded is client CPU on the
// hottest paths).
type LeaseRow struct {
	Key       string
	Owner     string
	Token     int64
	ExpiresAt time.Time
	TTL       time.Duration
}

// LeaseRow returns the lease columns of l.
func (l Lock) LeaseRow() LeaseRow {
	return LeaseRow{Key: l.Key, Owner: l.Owner, Token: l.Token, ExpiresAt: l.ExpiresAt, TTL: l.TTL}
}

// renewSQL extends a lease that is still current and unexpired. An expired
// lease is not revived even if nobody took it: its holder may already have
// been told it was lost.
const renewSQL = `
UPDATE distributed_lock l
SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond',
    ttl = $4::bigint * interval '1 microsecond',
    renewed_at = clock_timestamp(),
    renew_count = l.renew_count + 1
WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3
  AND l.released_at IS NULL AND l.expires_at > clock_timestamp()
RETURNING ` + leaseRowColumns

// Renew extends ref's lease by ttl from the database's now. ok is false when
// ref is no longer the current, unexpired grant.
func Renew(ctx context.Context, db DBTX, ref LeaseRef, ttl time.Duration) (LeaseRow, bool, error) {
	var r LeaseRow
	err := db.QueryRow(ctx, renewSQL, ref.Key, ref.Owner, ref.Token, ttl.Microseconds()).
		Scan(&r.Key, &r.Owner, &r.Token, &r.ExpiresAt, &r.TTL)
	return leaseRowResult(r, err)
}

// releaseSQL marks the row free and keeps it (see grantSQL). It sets only
// released_at, which no index covers, so the update can be HOT (no index
// writes); expires_at keeps the old lease's expiry.
//
// It wakes waiters with NOTIFY only when some may wait (see
// wakeWaitersSQL): a NOTIFY serialises the commits of every notifying
// transaction in the cluster, a cost releases nobody waits for should not
// pay.
//
// With $4 true the release commits without waiting for its WAL to reach
// disk (synchronous_commit off for this transaction only; Release passes true
// only when the statement is a transaction of its own). The setting is made
// in the WHERE clause rather than a FROM subquery, which would add a join
// set up on every execution (≈ 3 µs of backend CPU per release,
// BENCHMARKS.md); should it run for a row that then fails the other
// conditions, the transaction has nothing to commit either way. Safety never rests
// on a release: one lost in a crash leaves a lease that expires at its TTL,
// and any grant that saw the release commits durably after it, which
// flushes the release too (WAL is flushed in order).
const releaseSQL = releaseUpdateSQL + `
RETURNING ` + leaseRowColumns + `, ` + wakeWaitersSQL

// releaseLoggedSQL is releaseSQL that also logs a "released" event ($5 is
// the actor).
const releaseLoggedSQL = `
WITH released AS (` + releaseUpdateSQL + `
    RETURNING ` + leaseRowColumns + `, l.wake_until
), logged AS (
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor)
    SELECT l.lock_key, 'released', l.owner_id, l.fence_token, $5 FROM released l
)
SELECT ` + leaseRowColumns + `, ` + wakeWaitersSQL + `
FROM released l`

// releaseUpdateSQL is the release itself, shared by both statements.
const releaseUpdateSQL = `
UPDATE distributed_lock l SET released_at = clock_timestamp()
WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3 AND l.released_at IS NULL
  AND (NOT $4::boolean OR set_config('synchronous_commit', 'off', true) IS NOT NULL)`

// wakeWaitersSQL notifies l's waiters, if it may have any. A waiter sets
// wake_until on the row before its last attempt (see AddWaiter), and l is
// the row as this statement locked it, so no wake-up is lost: a waiter that
// set wake_until before the lock is seen here; one that tried after it
// waited for this statement's commit and then finds the key free.
const wakeWaitersSQL = `CASE WHEN l.wake_until > clock_timestamp()
    THEN pg_notify('` + NotifyChannel + `', l.lock_key) END`

// leaseRowColumns selects a LeaseRow from l.
const leaseRowColumns = `l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl`

// NotifyChannel is the LISTEN channel on which releases and operator actions
// announce a key that waiters may now take; the payload is the key.
const NotifyChannel = "distributed_lock"

// ReleaseParams is one release of a lease by its owner.
type ReleaseParams struct {
	LeaseRef
	// Log records a "released" event with Actor.
	Log   bool
	Actor string
	// Lazy lets a release that runs as its own transaction (see standalone)
	// commit without waiting for the disk (see releaseSQL). Inside a
	// caller's transaction it never changes durability.
	Lazy bool
}

// Release frees p's lease. ok is false when p is not the current grant or
// the lock was already released.
func Release(ctx context.Context, db DBTX, p ReleaseParams) (LeaseRow, bool, error) {
	lazy := p.Lazy && standalone(db)
	var row pgx.Row
	if p.Log {
		row = db.QueryRow(ctx, releaseLoggedSQL, p.Key, p.Owner, p.Token, lazy, p.Actor)
	} else {
		row = db.QueryRow(ctx, releaseSQL, p.Key, p.Owner, p.Token, lazy)
	}
	var r LeaseRow
	err := row.Scan(&r.Key, &r.Owner, &r.Token, &r.ExpiresAt, &r.TTL, nil)
	return leaseRowResult(r, err)
}

func leaseRowResult(r LeaseRow, err error) (LeaseRow, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return LeaseRow{}, false, nil
	}
	if err != nil {
		return LeaseRow{}, false, Interpret(err)
	}
	return r, true, nil
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
