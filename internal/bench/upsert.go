package bench

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The keep-row upsert: the fastest design among the peers, ported from
// ShedLock's JdbcTemplateLockProvider with usingDbTime() in its PostgreSQL
// flavour (PostgresSqlServerTimeStatementsSource), with a fencing token
// added the way such a table would grow one:
//
//   - tryAcquire is one autocommitted statement: INSERT the key's row, or ON
//     CONFLICT DO UPDATE it WHERE the lease has run out (a released row ran
//     out at its release) or is the caller's own. A row comes back when it
//     was granted, none when another owner holds it. "Now" is ShedLock's
//     timezone('utc', CURRENT_TIMESTAMP) into timestamp columns, and the
//     lease length its cast(… as interval) of "N milliseconds".
//   - The token is drawn by nextval inside DO UPDATE, so under the row's
//     lock (the caller's own unexpired lease keeps its token); the INSERT
//     path's VALUES draws one too, which only a key's first grant keeps.
//   - release is ShedLock's unlock with lockAtLeastFor 0: the row stays and
//     its lease ends now, matched by key and owner (no token).
//
// Both statements commit durably, as a peer runs them: no roles, no
// events, no queue, no epoch.

// upsertTableSQL is ShedLock's PostgreSQL table plus the token column and
// its sequence; created by benchTablesSQL, in the run's schema, and by hand
// beside upsert-cycle.sql for pgbench.
//
//go:embed pgbench/upsert-table.sql
var upsertTableSQL string

const upsertAcquireSQL = `
INSERT INTO upsert_lock (name, lock_until, locked_at, locked_by, fence_token)
VALUES ($1, timezone('utc', CURRENT_TIMESTAMP) + cast($3::text AS interval),
        timezone('utc', CURRENT_TIMESTAMP), $2, nextval('upsert_lock_seq'))
ON CONFLICT (name) DO UPDATE SET
    lock_until  = timezone('utc', CURRENT_TIMESTAMP) + cast($3::text AS interval),
    locked_at   = timezone('utc', CURRENT_TIMESTAMP),
    locked_by   = $2,
    fence_token = CASE WHEN upsert_lock.locked_by = $2
                            AND upsert_lock.lock_until > timezone('utc', CURRENT_TIMESTAMP)
                       THEN upsert_lock.fence_token ELSE nextval('upsert_lock_seq') END
WHERE upsert_lock.name = $1
  AND (upsert_lock.lock_until <= timezone('utc', CURRENT_TIMESTAMP) OR upsert_lock.locked_by = $2)
RETURNING fence_token`

const upsertReleaseSQL = `
UPDATE upsert_lock SET lock_until = timezone('utc', CURRENT_TIMESTAMP)
WHERE name = $1 AND locked_by = $2`

// upsert runs the design on a pool, with a fixed lease length.
type upsert struct {
	pool *pgxpool.Pool
	ttl  time.Duration
}

// lockAtMostFor is the lease length as ShedLock sends it.
func lockAtMostFor(ttl time.Duration) string {
	return strconv.FormatInt(ttl.Milliseconds(), 10) + " milliseconds"
}

// tryAcquire returns the granted token, or errRefused.
func (u upsert) tryAcquire(ctx context.Context, key, owner string) (int64, error) {
	var token int64
	err := u.pool.QueryRow(ctx, upsertAcquireSQL, key, owner, lockAtMostFor(u.ttl)).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errRefused
	}
	return token, err
}

// release ends owner's lease of key; false when owner had no row there.
func (u upsert) release(ctx context.Context, key, owner string) (bool, error) {
	tag, err := u.pool.Exec(ctx, upsertReleaseSQL, key, owner)
	return tag.RowsAffected() > 0, err
}
