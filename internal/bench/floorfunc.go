package bench

import (
	"context"
	_ "embed"
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
//
//go:embed pgbench/floor-functions.sql
var floorFuncSQL string

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
