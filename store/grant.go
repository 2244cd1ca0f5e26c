package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// GrantParams is one acquisition attempt.
type GrantParams struct {
	Key      string
	Owner    string
	TTL      time.Duration
	Metadata []byte // JSON object stored on the row; nil means {}
	Actor    string // recorded on the event
	Detail   []byte // JSON object of extra event detail (e.g. how long the caller waited); nil means {}
	// LogAcquired also logs grants of free or new rows as "acquired" events.
	// Steals are always logged.
	LogAcquired bool
}

// Grant is what a successful attempt granted and what it did.
type Grant struct {
	LeaseRow
	// Outcome is "acquired" (new row or a free one), "stolen" (another
	// owner's expired lease) or "renewed" (the caller already held it: same
	// token, later expiry).
	Outcome string
}

// grantSQL is the whole acquisition in one statement, so it is atomic on its
// own and costs one round trip and one commit:
//
//   - No row: INSERT. The unique key settles a race between two inserters;
//     ON CONFLICT sends the loser to the update branch instead of raising a
//     unique violation (which would abort a caller's transaction).
//   - Row exists: DO UPDATE locks it, then the WHERE decides: free, expired,
//     or already ours → take or extend; otherwise no row is returned (held).
//   - The token of a take-over is drawn in the update branch, i.e. while the
//     row is locked, so it is larger than every token granted on the key
//     before (a token drawn before waiting for the row could be older than a
//     grant made meanwhile). The token drawn in VALUES is only kept when the
//     row is new; see pruneSQL for why that is safe too.
//   - "Now" is clock_timestamp() read once, after the row lock is held:
//     now() would be the transaction start, stale after waiting on the row.
//   - The gate CTE takes a shared advisory lock that pruneSQL takes
//     exclusively, and is read before nextval so the lock is held first.
//   - Steals are logged in the same statement, and with $7 every other new
//     grant too; renewals never are (they are counted in renew_count).
//   - It returns only what a Lease needs: every column decoded is client CPU
//     on the hottest path.
const grantSQL = `
WITH gate AS MATERIALIZED (
    SELECT pg_advisory_xact_lock_shared('distributed_lock'::regclass::oid::int, 0)
), granted AS (
    INSERT INTO distributed_lock AS l
        (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, metadata)
    VALUES ($1, $2, (SELECT nextval('distributed_lock_fence_seq') FROM gate),
            clock_timestamp() + $3::bigint * interval '1 microsecond',
            $3::bigint * interval '1 microsecond', clock_timestamp(),
            coalesce($4::jsonb, '{}'))
    ON CONFLICT (lock_key) DO UPDATE SET
        (owner_id, fence_token, expires_at, ttl, acquired_at, renewed_at, renew_count,
         released_at, grant_kind, previous_owner, previous_token, metadata) =
        (SELECT excluded.owner_id,
                CASE WHEN d.mine THEN l.fence_token ELSE nextval('distributed_lock_fence_seq') END,
                d.ts + excluded.ttl,
                excluded.ttl,
                CASE WHEN d.mine THEN l.acquired_at ELSE d.ts END,
                CASE WHEN d.mine THEN d.ts END,
                CASE WHEN d.mine THEN l.renew_count + 1 ELSE 0 END,
                NULL::timestamptz,
                CASE WHEN d.mine THEN l.grant_kind
                     WHEN l.released_at IS NULL AND l.owner_id <> excluded.owner_id THEN 'stolen'
                     ELSE 'acquired' END,
                CASE WHEN d.mine THEN l.previous_owner ELSE l.owner_id END,
                CASE WHEN d.mine THEN l.previous_token ELSE l.fence_token END,
                excluded.metadata
         FROM (SELECT c.ts, (l.owner_id = excluded.owner_id AND l.released_at IS NULL
                             AND l.expires_at > c.ts) AS mine
               FROM (SELECT clock_timestamp() AS ts) c) d)
    WHERE l.released_at IS NOT NULL OR l.owner_id = excluded.owner_id
       OR l.expires_at <= clock_timestamp()
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.renew_count,
              l.grant_kind, l.previous_owner, l.previous_token
), logged AS (
    INSERT INTO distributed_lock_event
        (lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
    SELECT g.lock_key, g.grant_kind, g.owner_id, g.fence_token, $5, g.previous_owner,
           g.previous_token, coalesce($6::jsonb, '{}')
    FROM granted g WHERE g.renew_count = 0 AND (g.grant_kind = 'stolen' OR $7::boolean)
)
SELECT g.lock_key, g.owner_id, g.fence_token, g.expires_at, g.ttl,
       CASE WHEN g.renew_count > 0 THEN 'renewed' ELSE g.grant_kind END
FROM granted g`

// TryGrant runs one acquisition attempt. ok is false when another owner
// holds an unexpired lease; the caller then reads the holder with Get.
func TryGrant(ctx context.Context, db DBTX, p GrantParams) (g Grant, ok bool, err error) {
	err = db.QueryRow(ctx, grantSQL, p.Key, p.Owner, p.TTL.Microseconds(),
		p.Metadata, p.Actor, p.Detail, p.LogAcquired).
		Scan(&g.Key, &g.Owner, &g.Token, &g.ExpiresAt, &g.TTL, &g.Outcome)
	if errors.Is(err, pgx.ErrNoRows) {
		return Grant{}, false, nil
	}
	if err != nil {
		return Grant{}, false, Interpret(err)
	}
	return g, true, nil
}

// getSQL reads one lock row with remaining time from the database clock.
const getSQL = `SELECT ` + lockColumns + `
FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c
WHERE l.lock_key = $1`

// Get reads one lock. found is false when the key has no row.
func Get(ctx context.Context, db DBTX, key string) (l Lock, found bool, err error) {
	rows, err := db.Query(ctx, getSQL, key)
	if err != nil {
		return Lock{}, false, Interpret(err)
	}
	l, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Lock])
	if errors.Is(err, pgx.ErrNoRows) {
		return Lock{}, false, nil
	}
	if err != nil {
		return Lock{}, false, fmt.Errorf("read lock %q: %w", key, Interpret(err))
	}
	return l, true, nil
}
