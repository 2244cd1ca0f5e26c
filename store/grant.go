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

// Grant is the result of an attempt: what it granted, or, when refused,
// the key's row as the attempt found it.
type Grant struct {
	LeaseRow
	// Outcome is "acquired" (new row or a free one), "stolen" (another
	// owner's expired lease) or "renewed" (the caller already held it: same
	// token, later expiry) when granted. When refused it is "held" (another
	// owner's unexpired lease: LeaseRow and Remaining describe it), or
	// "free" or "expired" for a row that another transaction was changing at
	// that moment (the attempt does not wait for it; try again).
	Outcome string
	// Remaining is how long a refused holder's lease still runs, on the
	// database's clock.
	Remaining time.Duration
}

// Outcomes of an attempt that grantSQL reports; see Grant.Outcome. The two
// grant kinds are also the kinds of the events that record them.
const (
	OutcomeAcquired = "acquired"
	OutcomeStolen   = "stolen"
	OutcomeRenewed  = "renewed"
	OutcomeHeld     = "held"
	OutcomeFree     = "free"
	OutcomeExpired  = "expired"
)

// Granted reports whether the attempt took the key.
func (g Grant) Granted() bool {
	switch g.Outcome {
	case OutcomeAcquired, OutcomeStolen, OutcomeRenewed:
		return true
	}
	return false
}

// grantSQL is the whole acquisition in one statement, so it is atomic on its
// own and costs one round trip and one commit. TryGrant runs it only for
// what takeSQL leaves to it (a first grant, a steal, or logged grants):
//
//   - cur locks the key's row if the caller may take it: free, expired, or
//     already the caller's. SKIP LOCKED: a row another transaction holds
//     locked (a grant, release or fenced write in progress) is not taken and
//     not waited for; the attempt is refused at once, so a try never queues
//     behind other transactions.
//   - taken updates that row. Its token is drawn there, while the row is
//     locked, so it is larger than every token granted on the key before.
//     "Now" is one clock_timestamp() reading, taken after the lock.
//   - created inserts the row when the key has none. Its token is drawn
//     under the gate, a shared advisory lock that pruneSQL takes
//     exclusively, so deleting rows can never let a key's tokens go
//     backwards (see pruneSQL). ON CONFLICT DO NOTHING: a concurrent first
//     grant of the same key wins, this one is refused.
//   - Steals are logged in the same statement, and with $7 every other new
//     grant too; renewals never are (they are counted in renew_count).
//   - When nothing was granted, the last branch returns the key's row as the
//     statement found it, so a refusal costs no second round trip.
//   - It returns only what a Lease needs: every column decoded is client CPU
//     on the hottest path.
const grantSQL = `
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
    ON CONFLICT (lock_key) DO NOTHING
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.renew_count,
              l.grant_kind, l.previous_owner, l.previous_token
), granted AS (
    SELECT * FROM taken UNION ALL SELECT * FROM created
), logged AS (
    INSERT INTO distributed_lock_event
        (lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
    SELECT g.lock_key, g.grant_kind, g.owner_id, g.fence_token, $5, g.previous_owner,
           g.previous_token, coalesce($6::jsonb, '{}')
    FROM granted g WHERE g.renew_count = 0 AND (g.grant_kind = 'stolen' OR $7::boolean)
)
SELECT g.lock_key, g.owner_id, g.fence_token, g.expires_at, g.ttl,
       CASE WHEN g.renew_count > 0 THEN 'renewed' ELSE g.grant_kind END AS outcome,
       interval '0' AS remaining
FROM granted g
UNION ALL
` + refusedSQL

// takeSQL is the acquisition almost every attempt needs: the key's row
// exists and is free, or is already the caller's. It is grantSQL without
// the branches that path never takes (creating the row, a steal and its
// event, the gate), which are most of grantSQL's server CPU even when they
// do nothing: every CTE's plan node is started on every execution.
//
//   - The subquery locks the row, SKIP LOCKED, only if the caller may take
//     it without a steal: free, or its own (current or lapsed).
//   - The token is drawn while the row is locked, as in grantSQL. "Now" is
//     statement_timestamp(), the database's clock when the statement
//     arrived: one instant for every column, so a renewal is judged on one
//     instant, and as fresh as a clock_timestamp() reading because nothing
//     here waits (SKIP LOCKED). Reading it costs no join, where a
//     clock_timestamp() subquery costs a plan node set up on every
//     execution (≈ 3 µs of backend CPU per grant, BENCHMARKS.md).
//   - A renewal (the caller's own unexpired lease) keeps the token and
//     acquired_at; anything else is a new grant of a free row, "acquired".
//   - When nothing was taken, the row is returned as the statement found
//     it, as grantSQL does: "held" is a refusal in one round trip; "expired"
//     (another owner's lapsed lease: a steal) and no row at all (a first
//     grant) are left to grantSQL (see TryGrant).
const takeSQL = `
WITH granted AS (
    UPDATE distributed_lock l SET
        owner_id       = $2,
        fence_token    = CASE WHEN ` + takeMineSQL + ` THEN l.fence_token
                              ELSE nextval('distributed_lock_fence_seq') END,
        expires_at     = statement_timestamp() + $3::bigint * interval '1 microsecond',
        ttl            = $3::bigint * interval '1 microsecond',
        acquired_at    = CASE WHEN ` + takeMineSQL + ` THEN l.acquired_at ELSE statement_timestamp() END,
        renewed_at     = CASE WHEN ` + takeMineSQL + ` THEN statement_timestamp() END,
        renew_count    = CASE WHEN ` + takeMineSQL + ` THEN l.renew_count + 1 ELSE 0 END,
        released_at    = NULL,
        grant_kind     = CASE WHEN ` + takeMineSQL + ` THEN l.grant_kind ELSE 'acquired' END,
        previous_owner = CASE WHEN ` + takeMineSQL + ` THEN l.previous_owner ELSE l.owner_id END,
        previous_token = CASE WHEN ` + takeMineSQL + ` THEN l.previous_token ELSE l.fence_token END,
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
` + refusedSQL

// refusedSQL ends grantSQL and takeSQL: the key's row as the statement
// found it, when their CTE "granted" is empty, judged at
// statement_timestamp(). That is as fresh as the clock can be here: the
// only wait in either statement is grantSQL's insert of a key that had no
// row when the statement began, and then this branch, reading the
// statement's snapshot, finds no row either.
const refusedSQL = `
SELECT l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
       CASE WHEN l.released_at IS NOT NULL THEN 'free'
            WHEN l.expires_at <= statement_timestamp() THEN 'expired' ELSE 'held' END,
       l.expires_at - statement_timestamp()
FROM distributed_lock l
WHERE l.lock_key = $1 AND NOT EXISTS (SELECT 1 FROM granted)`

// takeMineSQL is true in takeSQL when the row is the caller's unexpired
// lease: the attempt renews it.
const takeMineSQL = `(l.owner_id = $2 AND l.released_at IS NULL AND l.expires_at > statement_timestamp())`

// TryGrant runs one acquisition attempt: takeSQL, and grantSQL only when
// takeSQL leaves the attempt to it (the key has no row, or its lease is
// another owner's and has lapsed: a steal) or when every grant is to be
// logged. So an attempt on a known key costs one round trip, a first grant
// or a steal two. found is false when nothing was granted and the key had
// no row when the statement started (a first grant of it by someone else
// was in progress).
func TryGrant(ctx context.Context, db DBTX, p GrantParams) (g Grant, found bool, err error) {
	if !p.LogAcquired {
		g, found, err = scanGrant(db.QueryRow(ctx, takeSQL, p.Key, p.Owner, p.TTL.Microseconds(), p.Metadata))
		if err != nil || (found && g.Outcome != OutcomeExpired) {
			return g, found, err
		}
	}
	return scanGrant(db.QueryRow(ctx, grantSQL, p.Key, p.Owner, p.TTL.Microseconds(),
		p.Metadata, p.Actor, p.Detail, p.LogAcquired))
}

func scanGrant(row pgx.Row) (g Grant, found bool, err error) {
	err = row.Scan(&g.Key, &g.Owner, &g.Token, &g.ExpiresAt, &g.TTL, &g.Outcome, &g.Remaining)
	if errors.Is(err, pgx.ErrNoRows) {
		return Grant{}, false, nil
	}
	if err != nil {
		return Grant{}, false, Interpret(err)
	}
	return g, true, nil
}

// getSQL reads one lock row with remaining time from the database clock.
const getSQL = `SELECT ` + LockColumns + `
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
