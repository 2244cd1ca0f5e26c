package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/pgtemp"
)

// Command is `lockctl bench`, for main.go's command table.
func Command() cli.Command {
	return cli.Command{
		Name: "bench",
		Summary: "measure acquire+release cost: locker vs the reference design vs commit and network floors " +
			"(a throwaway durable PostgreSQL unless --dsn; see BENCHMARKS.md)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o Options
			var asJSON bool
			var keepaliveLocks int
			fs.IntSliceVar(&o.Workers, "workers", []int{1, 8, 32}, "concurrency levels to measure")
			cli.DurationVar(fs, &o.Duration, "duration", 2*time.Second, "how long each series runs per round")
			fs.IntVar(&o.Rounds, "rounds", 3, "rounds; results are medians over rounds")
			fs.IntVar(&o.HotKeys, "hot-keys", 4, "keys shared by all workers in the contended scenario")
			fs.IntVar(&keepaliveLocks, "keepalive-locks", 1000, "locks kept alive while measuring client CPU (0: skip)")
			cli.DurationVar(fs, &o.RTT, "rtt", 0, "simulated network round-trip time added before every statement")
			cli.DurationVar(fs, &o.KeepaliveFor, "keepalive-for", 30*time.Second, "how long keepalive CPU is measured")
			fs.BoolVar(&asJSON, "json", false, "print the report as JSON instead of Markdown")
			return func(ctx context.Context, env cli.Env, _ []string) int {
				o.KeepaliveLocks = keepaliveLocks
				if keepaliveLocks == 0 {
					o.KeepaliveLocks = -1
				}
				if o.Rounds < 1 || o.HotKeys < 1 || keepaliveLocks < 0 || o.KeepaliveFor <= 0 {
					return env.Usagef("--rounds, --hot-keys and --keepalive-for must be positive, --keepalive-locks not negative")
				}
				o.Progress = env.Stderr
				return run(ctx, env, o, asJSON)
			}
		},
	}
}

func run(ctx context.Context, env cli.Env, o Options, asJSON bool) int {
	if _, err := o.withDefaults(); err != nil {
		return env.Usagef("%s", strings.TrimPrefix(err.Error(), "bench: "))
	}
	// Not env.DSN, which falls back to $DATABASE_URL: a benchmark must not
	// load a server the user did not name.
	dsn := env.ExplicitDSN
	if dsn == "" {
		fmt.Fprintf(env.Stderr, "%s: starting a throwaway PostgreSQL (durable commits, default settings)\n", env.Prog)
		srv, err := pgtemp.Start(ctx, pgtemp.Options{})
		if err != nil {
			return env.Fail(err)
		}
		defer srv.Close()
		dsn = srv.DSN("")
	}
	rep, err := Run(ctx, dsn, o)
	if err != nil {
		return env.Fail(err)
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.WriteMarkdown(env.Stdout)
	}
	if err != nil {
		return env.Fail(err)
	}
	return cli.ExitOK
}
