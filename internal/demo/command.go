package demo

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/tui"
)

// Command is `lockctl demo`, for main.go's command tree.
func Command() *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use: "demo",
		Short: "the console on a private throwaway PostgreSQL with simulated workers: hand-offs, " +
			"steals, a refused zombie write, a two-key transfer, a lock-delay, a deadlock reported, " +
			"a 3-permit pool, readers sharing a key a writer queues for, " +
			"a stuck lock to free with x (--dsn: schema " + Schema + " of that database)",
		RunE: cli.RunE(func(ctx context.Context, env cli.Env, _ []string) int {
			if err := flagsValid(o); err != nil {
				return env.Usagef("%v", err)
			}
			// Before the private server starts: without a terminal the
			// console could not open, after seconds of setup.
			if err := tui.CheckTerminal(os.Stdin, os.Stdout); err != nil {
				return env.Usagef("%v", err)
			}
			// Not env.DSN, which falls back to $DATABASE_URL: the demo
			// writes, so it runs only on a database the user named.
			o.DSN = env.ExplicitDSN
			o.Actor, o.Stderr = env.Actor, env.Stderr
			if err := Run(ctx, o); err != nil {
				return env.Fail(err)
			}
			return cli.ExitOK
		}),
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Workers, "workers", 8, "workers contending for the hot keys (besides the fixed cast)")
	fs.IntVar(&o.HotKeys, "keys", 4, "hot keys the workers contend for")
	fs.Float64Var(&o.Speed, "speed", 1, "pace of the story (2 = twice as fast; TTLs scale too)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of every random choice: the same seed replays the same story (0: pick one, shown in the header)")
	cli.DurationVar(fs, &o.Refresh, "refresh", 500*time.Millisecond, "console poll interval")
	fs.BoolVar(&o.ReadOnly, "read-only", false, "watch only: no acquire, renew, expire or release in the console")
	cli.ThemeVar(fs, &o.Theme)
	return cli.ExplicitOnly(cmd)
}

// flagsValid names the first flag out of bounds. Zero is refused here,
// though Config takes it as "default": on the command line it is a mistake.
func flagsValid(o Options) error {
	switch {
	case o.Workers < 1:
		return fmt.Errorf("--workers %d: must be between 1 and %d", o.Workers, MaxWorkers)
	case o.HotKeys < 1:
		return fmt.Errorf("--keys %d: must be between 1 and %d", o.HotKeys, MaxHotKeys)
	case o.Speed <= 0:
		return fmt.Errorf("--speed %g: must be between %g and %g", o.Speed, MinSpeed, float64(MaxSpeed))
	case o.Refresh <= 0:
		return fmt.Errorf("--refresh %s: must be positive", o.Refresh)
	}
	return o.Config.Validate()
}
