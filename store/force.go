package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// ForceParams is an operator action on the grant the operator saw.
type ForceParams struct {
	Key    string
	Token  int64  // the token the operator saw; the action applies only if it is still current
	Actor  string // who, recorded on the event
	Reason string // optional, recorded on the event
}

// forceExpireSQL calls distributed_lock_force_expire (schema.sql): it ends
// a lease now without freeing the row, so the next acquirer takes it over as
// a steal, with a new token. Matching on the token makes the action a no-op
// (no row here) if the lock changed hands after the operator looked.
const forceExpireSQL = `
SELECT f.lock_key, f.owner_id, f.fence_token, f.expires_at, f.ttl
FROM distributed_lock_force_expire($1, $2, $3, $4) f WHERE f.outcome = '` + lockdb.OutcomeForceExpired + `'`

// ForceExpire expires the grant p.Token of p.Key and returns the row after
// it. ok is false when that token is no longer the current, unreleased grant.
func ForceExpire(ctx context.Context, db DBTX, p ForceParams) (LeaseRow, bool, error) {
	return forceResult(ctx, db, forceExpireSQL, p)
}

// forceReleaseSQL calls distributed_lock_force_release (schema.sql): it
// frees the row as if its holder had released it.
const forceReleaseSQL = `
SELECT f.lock_key, f.owner_id, f.fence_token, f.expires_at, f.ttl
FROM distributed_lock_force_release($1, $2, $3, $4) f WHERE f.outcome = '` + lockdb.OutcomeForceReleased + `'`

// ForceRelease frees the grant p.Token of p.Key and returns the row after
// it. ok is false when that token is no longer the current, unreleased grant.
func ForceRelease(ctx context.Context, db DBTX, p ForceParams) (LeaseRow, bool, error) {
	return forceResult(ctx, db, forceReleaseSQL, p)
}

func forceResult(ctx context.Context, db DBTX, sql string, p ForceParams) (LeaseRow, bool, error) {
	return scanLeaseRow(db.QueryRow(ctx, sql, p.Key, p.Token, p.Actor, nullIfEmpty(p.Reason)))
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// endDelaySQL calls distributed_lock_end_delay (schema.sql): it ends a
// key's lock-delay now and passes the key on to its waiters. A key not in
// a lock-delay reads as no row.
const endDelaySQL = `
SELECT f.lock_key, f.owner_id, f.fence_token, f.expires_at, f.ttl, f.delay_until
FROM distributed_lock_end_delay($1, $2, $3) f WHERE f.outcome = '` + lockdb.OutcomeDelayEnded + `'`

// EndDelayParams is an operator's early end of a key's lock-delay.
type EndDelayParams struct {
	Key    string
	Actor  string // who, recorded on the event
	Reason string // optional, recorded on the event
}

// EndDelay ends p.Key's lock-delay and returns the row's last lease and
// when the delay would have ended. ok is false when the key was not in a
// lock-delay.
func EndDelay(ctx context.Context, db DBTX, p EndDelayParams) (row LeaseRow, delayUntil time.Time, ok bool, err error) {
	err = db.QueryRow(ctx, endDelaySQL, p.Key, p.Actor, nullIfEmpty(p.Reason)).
		Scan(&row.Key, &row.Owner, &row.Token, &row.ExpiresAt, &row.TTL, &delayUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return LeaseRow{}, time.Time{}, false, nil
	}
	if err != nil {
		return LeaseRow{}, time.Time{}, false, Interpret(err)
	}
	return row, delayUntil, true, nil
}
