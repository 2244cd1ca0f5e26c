package bench

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The function floor: the least a lock cycle can cost while every write
// goes through a SECURITY DEFINER function with a pinned search_path, as
// roles need (internal/roles), and the grant keeps what the lock contract
// asks of every grant: it never waits for a row another transaction has
// locked (SKIP LOCKED) and draws its token in the server's epoch
// (distributed_lock_draw_token, on the lock schema's own epoch row), so
// tokens keep rising across a failover. Its grant is one UPDATE of a free,
// lapsed or own row of a table shaped like distributed_lock, drawing the
// token under the row lock (a key's first grant inserts the row); its
// release one UPDATE, committed lazily like the locker's. No queue, events,
// outcomes or refusal reasons: what is left of a cycle when the protocol
// does nothing else.
const floorFuncSQL = `
CREATE TABLE bench_fn_lock (LIKE distributed_lock INCLUDING ALL);
CREATE FUNCTION bench_fn_take(key text, owner text, ttl_us bigint, OUT token bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE bench_fn_lock l SET owner_id = owner,
        fence_token = distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)),
        expires_at = clock_timestamp() + ttl_us * interval '1 microsecond',
        ttl = ttl_us * interval '1 microsecond', acquired_at = clock_timestamp(), released_at = NULL
    WHERE l.lock_key = (SELECT x.lock_key FROM bench_fn_lock x
                        WHERE x.lock_key = key
                          AND (x.released_at IS NOT NULL OR x.owner_id = owner OR x.expires_at <= clock_timestamp())
                        FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING l.fence_token INTO token;
    IF NOT FOUND THEN
        INSERT INTO bench_fn_lock AS l (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at)
        VALUES (key, owner, distributed_lock_draw_token((SELECT e.timeline FROM distributed_lock_epoch e)), clock_timestamp() + ttl_us * interval '1 microsecond',
                ttl_us * interval '1 microsecond', clock_timestamp())
        ON CONFLICT (lock_key) DO NOTHING
        RETURNING l.fence_token INTO token;
    END IF;
END $$;
CREATE FUNCTION bench_fn_release(key text, owner text, token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE bench_fn_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = key AND l.owner_id = owner AND l.fence_token = token AND l.released_at IS NULL;
    IF FOUND THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    RETURN FOUND;
END $$;
`

const (
	floorFuncTakeSQL    = `SELECT bench_fn_take($1, $2, $3::bigint)`
	floorFuncReleaseSQL = `SELECT bench_fn_release($1, $2, $3)`
)

// floorFunc runs the function floor on a pool.
type floorFunc struct {
	pool *pgxpool.Pool
	ttl  time.Duration
}

// tryAcquire returns the granted token, or errRefused (NULL: held).
func (f floorFunc) tryAcquire(ctx context.Context, key, owner string) (int64, error) {
	var token *int64
	if err := f.pool.QueryRow(ctx, floorFuncTakeSQL, key, owner, f.ttl.Microseconds()).Scan(&token); err != nil {
		return 0, err
	}
	if token == nil {
		return 0, errRefused
	}
	return *token, nil
}

// release frees the lease of the token last granted to owner on key.
func (f floorFunc) release(ctx context.Context, key, owner string, token int64) (bool, error) {
	var ok bool
	err := f.pool.QueryRow(ctx, floorFuncReleaseSQL, key, owner, token).Scan(&ok)
	return ok, err
}
