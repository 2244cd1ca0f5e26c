package cli

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/store"
)

// Migrate applies schema (the text of schema.sql, embedded in the binary)
// to the database. The schema is idempotent, so running it again is safe.
func Migrate(ctx context.Context, env Env, schema string) int {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool, schema); err != nil {
		return env.Fail(err)
	}
	fmt.Fprintf(env.Stdout, "migrated %s: lock tables are up to date\n", ServerName(pool.Config().ConnConfig))
	return ExitOK
}
