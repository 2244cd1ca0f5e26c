package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/store"
)

// MigrateOptions are migrate's flags.
type MigrateOptions struct {
	// SeedTimeZone is the zone the reference service's JVM ran in, for
	// adopting its table ("": the session's TimeZone).
	SeedTimeZone string
}

// Migrate applies the schema the binary was built with (locker.Migrate's)
// to the database. The schema is idempotent, so running it again is safe.
// On the reference service's table it adopts the table and says what it
// kept.
func Migrate(ctx context.Context, env Env, opts MigrateOptions) int {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	adoption, err := store.MigrateWith(ctx, pool, store.MigrateOptions{SeedTimeZone: opts.SeedTimeZone, AdoptSeed: true})
	if errors.Is(err, store.ErrUnknownTimeZone) {
		return env.Usagef("invalid --seed-time-zone: %v", err)
	}
	if err != nil {
		return env.Fail(err)
	}
	server := ServerName(pool.Config().ConnConfig)
	if adoption.Adopted {
		fmt.Fprintf(env.Stdout, "adopted the reference service's distributed_lock on %s: %d locks kept (%d held), "+
			"expires_at read as local time in %s; new fencing tokens start above %d\n",
			server, adoption.Locks, adoption.Held, adoption.TimeZone, adoption.MaxToken)
	}
	fmt.Fprintf(env.Stdout, "migrated %s: lock tables are up to date\n", server)
	return ExitOK
}
