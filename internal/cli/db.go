package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// openDB connects for a command and reports a failure itself: ok is false
// and code is the exit code to return then. The caller closes the pool.
func openDB(ctx context.Context, env Env) (pool *pgxpool.Pool, code int, ok bool) {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return nil, env.Fail(err), false
	}
	return pool, ExitOK, true
}
