package cli

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/locker"
)

// Migrate applies the schema the binary was built with (locker.Migrate) to
// the database. The schema is idempotent, so running it again is safe.
func Migrate(ctx context.Context, env Env) int {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	if err := locker.Migrate(ctx, pool); err != nil {
		return env.Fail(err)
	}
	fmt.Fprintf(env.Stdout, "migrated %s: lock tables are up to date\n", ServerName(pool.Config().ConnConfig))
	return ExitOK
}
