package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
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

// renewSQL calls distributed_lock_renew (schema.sql): it extends a lease
// that is still current and unexpired, and answers with the revoke pending
// on it (all NULL when none). A lease that is not current reads as no row.
const renewSQL = `
SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl,
       r.requested_at, r.reason, r.actor, r.caller_role, r.force_at, r.remaining
FROM distributed_lock_renew($1, $2, $3, $4::bigint) r
WHERE r.outcome = '` + lockdb.OutcomeRenewed + `'`

// Renew extends ref's lease by ttl from the database's now, and returns the
// revoke an operator left on it (nil: none). ok is false when ref is no
// longer the current, unexpired grant.
func Renew(ctx context.Context, db DBTX, ref LeaseRef, ttl time.Duration) (LeaseRow, *Revoke, bool, error) {
	return scanRenewal(db.QueryRow(ctx, renewSQL, ref.Key, ref.Owner, ref.Token, ttl.Microseconds()))
}

// releaseSQL calls distributed_lock_release (schema.sql): it marks the row
// free and keeps it, wakes waiters, and with $6 logs the release. A lease
// that is not current reads as no row.
const releaseSQL = `
SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl
FROM distributed_lock_release($1, $2, $3, $4::boolean, $5::boolean, $6) r WHERE r.outcome = '` + lockdb.OutcomeReleased + `'`

// NotifyChannel is the LISTEN channel on which releases and operator actions
// (the functions in schema.sql) wake the waiters of a key whose records name
// no wake channel; the payload is the key. A record that names one is woken
// there (see WakeChannel).
const NotifyChannel = "distributed_lock"

// ReleaseParams is one release of a lease by its owner.
type ReleaseParams struct {
	LeaseRef
	// Log records a "released" event with Actor.
	Log   bool
	Actor string
	// Lazy lets a release that runs as its own transaction (see standalone)
	// commit without waiting for the disk (see distributed_lock_release in
	// schema.sql). Inside a caller's transaction it never changes
	// durability.
	Lazy bool
}

// Release frees p's lease. ok is false when p is not the current grant or
// the lock was already released.
func Release(ctx context.Context, db DBTX, p ReleaseParams) (LeaseRow, bool, error) {
	lazy := p.Lazy && standalone(db)
	return scanLeaseRow(db.QueryRow(ctx, releaseSQL, p.Key, p.Owner, p.Token, lazy, p.Log, p.Actor))
}

// scanLeaseRow reads the row of a statement that selects LeaseRow's columns
// in its order and keeps only the successful outcome, so no row (the
// lease was not current) reads as ok == false.
func scanLeaseRow(row pgx.Row) (LeaseRow, bool, error) {
	var r LeaseRow
	err := row.Scan(&r.Key, &r.Owner, &r.Token, &r.ExpiresAt, &r.TTL)
	if errors.Is(err, pgx.ErrNoRows) {
		return LeaseRow{}, false, nil
	}
	if err != nil {
		return LeaseRow{}, false, Interpret(err)
	}
	return r, true, nil
}

// fenceSQL calls distributed_lock_fence (schema.sql), which locks the row
// FOR SHARE in the caller's transaction when ref is current.
const fenceSQL = `SELECT distributed_lock_fence($1, $2, $3)`

// Fence reports whether ref is still the current, unexpired grant, and if so
// keeps it so until db's transaction ends: every take-over must lock the row
// for update, so no other owner can be granted the key before the caller's
// guarded writes commit or roll back.
func Fence(ctx context.Context, db DBTX, ref LeaseRef) (bool, error) {
	var held bool
	if err := db.QueryRow(ctx, fenceSQL, ref.Key, ref.Owner, ref.Token).Scan(&held); err != nil {
		return false, Interpret(err)
	}
	return held, nil
}
