package bench

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockctl/lockctl/internal/lockdb"
)

// statements is the lock protocol as client statements instead of calls of
// schema.sql's functions: hand-tuned SQL with parameters where the
// functions have variables, but without the functions' queue checks and
// hand-off, token epoch check and reset of handed_to. The "statements"
// series runs it beside the locker (which calls the functions), so locker ÷
// statements measures the function call plus that queue and epoch work. It
// runs as the owner of the tables, which the functions do not need. Only
// the default locker's path is kept: an unlogged grant (take first; the
// full grant for a first grant or a steal) and a lazy release. Like the
// other designs the series model, it reads the server's clock itself, not
// the protocol's (distributed_lock_now).

// stmtTakeSQL is the grant of a row that exists and is free or the
// caller's own: one UPDATE that locks the row SKIP LOCKED and draws the
// token while it is locked, or, when nothing was taken, the row as found.
const stmtTakeSQL = `
WITH granted AS (
    UPDATE distributed_lock l SET
        owner_id       = $2,
        fence_token    = CASE WHEN ` + stmtTakeMineSQL + ` THEN l.fence_token
                              ELSE nextval('distributed_lock_fence_seq') END,
        expires_at     = statement_timestamp() + $3::bigint * interval '1 microsecond',
        ttl            = $3::bigint * interval '1 microsecond',
        acquired_at    = CASE WHEN ` + stmtTakeMineSQL + ` THEN l.acquired_at ELSE statement_timestamp() END,
        renewed_at     = CASE WHEN ` + stmtTakeMineSQL + ` THEN statement_timestamp() END,
        renew_count    = CASE WHEN ` + stmtTakeMineSQL + ` THEN l.renew_count + 1 ELSE 0 END,
        released_at    = NULL,
        grant_kind     = CASE WHEN ` + stmtTakeMineSQL + ` THEN l.grant_kind ELSE 'acquired' END,
        previous_owner = CASE WHEN ` + stmtTakeMineSQL + ` THEN l.previous_owner ELSE l.owner_id END,
        previous_token = CASE WHEN ` + stmtTakeMineSQL + ` THEN l.previous_token ELSE l.fence_token END,
        metadata       = coalesce($4::jsonb, '{}')
    WHERE l.lock_key = (SELECT x.lock_key FROM distributed_lock x
                        WHERE x.lock_key = $1 AND (x.released_at IS NOT NULL OR x.owner_id = $2)
                        FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
              CASE WHEN l.renew_count > 0 THEN 'renewed' ELSE 'acquired' END AS outcome,
              interval '0' AS remaining
)
SELECT * FROM granted
UNION ALL
` + stmtRefusedSQL

// stmtGrantSQL is the whole acquisition: a first grant (under the prune
// gate), a steal (logged), or a refusal.
const stmtGrantSQL = `
WITH gate AS MATERIALIZED (
    SELECT pg_advisory_xact_lock_shared('distributed_lock'::regclass::oid::int, 0)
), cur AS MATERIALIZED (
    SELECT l.lock_key FROM distributed_lock l
    WHERE l.lock_key = $1
      AND (l.released_at IS NOT NULL OR l.owner_id = $2 OR l.expires_at <= clock_timestamp())
    FOR NO KEY UPDATE SKIP LOCKED
), taken AS (
    UPDATE distributed_lock l SET
        (owner_id, fence_token, expires_at, ttl, acquired_at, renewed_at, renew_count,
         released_at, grant_kind, previous_owner, previous_token, metadata) =
        (SELECT $2,
                CASE WHEN d.mine THEN l.fence_token ELSE nextval('distributed_lock_fence_seq') END,
                d.ts + $3::bigint * interval '1 microsecond',
                $3::bigint * interval '1 microsecond',
                CASE WHEN d.mine THEN l.acquired_at ELSE d.ts END,
                CASE WHEN d.mine THEN d.ts END,
                CASE WHEN d.mine THEN l.renew_count + 1 ELSE 0 END,
                NULL::timestamptz,
                CASE WHEN d.mine THEN l.grant_kind
                     WHEN l.released_at IS NULL AND l.owner_id <> $2 THEN 'stolen'
                     ELSE 'acquired' END,
                CASE WHEN d.mine THEN l.previous_owner ELSE l.owner_id END,
                CASE WHEN d.mine THEN l.previous_token ELSE l.fence_token END,
                coalesce($4::jsonb, '{}')
         FROM (SELECT c.ts, (l.owner_id = $2 AND l.released_at IS NULL
                             AND l.expires_at > c.ts) AS mine
               FROM (SELECT clock_timestamp() AS ts) c) d)
    FROM cur WHERE l.lock_key = cur.lock_key
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.renew_count,
              l.grant_kind, l.previous_owner, l.previous_token
), created AS (
    INSERT INTO distributed_lock AS l
        (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, metadata)
    SELECT $1, $2, (SELECT nextval('distributed_lock_fence_seq') FROM gate),
           clock_timestamp() + $3::bigint * interval '1 microsecond',
           $3::bigint * interval '1 microsecond', clock_timestamp(),
           coalesce($4::jsonb, '{}')
    WHERE NOT EXISTS (SELECT 1 FROM distributed_lock x WHERE x.lock_key = $1)
    ON CONFLICT (lock_key, slot) DO NOTHING
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.renew_count,
              l.grant_kind, l.previous_owner, l.previous_token
), granted AS (
    SELECT * FROM taken UNION ALL SELECT * FROM created
), logged AS (
    INSERT INTO distributed_lock_event
        (occurred_at, lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
    SELECT clock_timestamp(), g.lock_key, g.grant_kind, g.owner_id, g.fence_token, $5, g.previous_owner,
           g.previous_token, coalesce($6::jsonb, '{}')
    FROM granted g WHERE g.renew_count = 0 AND (g.grant_kind = 'stolen' OR $7::boolean)
)
SELECT g.lock_key, g.owner_id, g.fence_token, g.expires_at, g.ttl,
       CASE WHEN g.renew_count > 0 THEN 'renewed' ELSE g.grant_kind END AS outcome,
       interval '0' AS remaining
FROM granted g
UNION ALL
` + stmtRefusedSQL

// stmtRefusedSQL ends both grant statements: the key's row as found, when
// nothing was granted.
const stmtRefusedSQL = `
SELECT l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
       CASE WHEN l.released_at IS NOT NULL THEN 'free'
            WHEN l.expires_at <= statement_timestamp() THEN 'expired' ELSE 'held' END,
       l.expires_at - statement_timestamp()
FROM distributed_lock l
WHERE l.lock_key = $1 AND NOT EXISTS (SELECT 1 FROM granted)`

// stmtTakeMineSQL is true when the row is the caller's unexpired lease.
const stmtTakeMineSQL = `(l.owner_id = $2 AND l.released_at IS NULL AND l.expires_at > statement_timestamp())`

// stmtReleaseSQL frees the caller's lease, committing lazily
// (synchronous_commit off for its own transaction), and wakes waiters.
const stmtReleaseSQL = `
UPDATE distributed_lock l SET released_at = clock_timestamp()
WHERE l.lock_key = $1 AND l.owner_id = $2 AND l.fence_token = $3 AND l.released_at IS NULL
  AND set_config('synchronous_commit', 'off', true) IS NOT NULL
RETURNING CASE WHEN l.wake_until > clock_timestamp() THEN pg_notify('distributed_lock', l.lock_key) END`

// stmtLocker runs the statements on a pool.
type stmtLocker struct {
	pool *pgxpool.Pool
	ttl  time.Duration
}

// tryAcquire is one attempt: the token when granted, errRefused when not.
func (s stmtLocker) tryAcquire(ctx context.Context, key, owner string) (int64, error) {
	outcome, token, found, err := s.attempt(ctx, stmtTakeSQL, key, owner)
	if err != nil {
		return 0, err
	}
	if !found || outcome == lockdb.OutcomeExpired {
		if outcome, token, _, err = s.attempt(ctx, stmtGrantSQL, key, owner, nil, owner, nil, false); err != nil {
			return 0, err
		}
	}
	switch outcome {
	case lockdb.OutcomeAcquired, lockdb.OutcomeStolen, lockdb.OutcomeRenewed:
		return token, nil
	}
	return 0, errRefused
}

func (s stmtLocker) attempt(ctx context.Context, sql, key, owner string, more ...any) (outcome string, token int64, found bool, err error) {
	args := append([]any{key, owner, s.ttl.Microseconds(), nil}, more...)
	var k, o string
	var exp time.Time
	var ttl, remaining time.Duration
	err = s.pool.QueryRow(ctx, sql, args...).Scan(&k, &o, &token, &exp, &ttl, &outcome, &remaining)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	return outcome, token, err == nil, err
}

// release frees the lease; false when it was no longer current.
func (s stmtLocker) release(ctx context.Context, key, owner string, token int64) (bool, error) {
	tag, err := s.pool.Exec(ctx, stmtReleaseSQL, key, owner, token)
	return tag.RowsAffected() == 1, err
}
