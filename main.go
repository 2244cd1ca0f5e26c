// Command lockctl is the console and scriptable CLI for distributed locks
// kept in PostgreSQL. This file is the command table and the wiring: which
// commands exist and their flags. Command bodies live in internal/cli (and
// the console in tui).
package main

import (
	"context"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/bench"
	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/demo"
	"github.com/lockctl/lockctl/internal/serve"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/tui"
)

// commands is the command table: adding a command is one entry. Each Flags
// function defines the command's flags (the global flags --dsn,
// --notify-dsn, --actor and --help are added by cli.Dispatch) and returns
// the action that runs it.
var commands = []cli.Command{
	{
		Name: "", Summary: "open the console: the live lock table (the default when no command is given)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var refresh, ttl time.Duration
			cli.TTLVar(fs, &refresh, "refresh", time.Second, "how often the console polls the database (at least 100ms)")
			readOnly := fs.Bool("read-only", false, "watch only: no acquire, renew, expire or release")
			cli.TTLVar(fs, &ttl, "ttl", 30*time.Second, "default lease length in the console's acquire form")
			return func(ctx context.Context, env cli.Env, _ []string) int {
				if refresh < 100*time.Millisecond {
					return env.Usagef("invalid --refresh %s: must be at least 100ms", refresh)
				}
				if err := tui.CheckTerminal(os.Stdin, os.Stdout); err != nil {
					return env.Usagef("%v", err)
				}
				// Not cli.Connect: the console starts while the database is
				// down and shows itself reconnecting.
				pool, err := cli.Open(ctx, env.DSN)
				if err != nil {
					return env.Fail(err)
				}
				defer cli.CloseWithin(pool, consoleCloseWait)
				lk, err := locker.New(locker.Config{Actor: env.Actor, TTL: ttl, LogGrants: true})
				if err != nil {
					return env.Fail(err)
				}
				// The header shows whether wake-ups are live; a warning on
				// stderr would tear the screen.
				quiet := env
				quiet.Stderr = io.Discard
				notifier, stopNotifier, err := cli.StartNotifier(ctx, quiet, pool)
				if err != nil {
					return env.Fail(err)
				}
				defer stopNotifier()
				err = tui.Run(ctx, tui.Options{Pool: pool, Locker: lk, Refresh: refresh, ReadOnly: *readOnly,
					Server: cli.ServerName(pool.Config().ConnConfig), Owner: locker.NewOwnerID(), TTL: ttl,
					WakeUps: notifier.State})
				if err != nil {
					return env.Fail(err)
				}
				return cli.ExitOK
			}
		},
	},
	{
		Name: "ls", Summary: "list the locks, ordered by key (--watch: again every --interval)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.LsOptions
			fs.StringVar(&o.Prefix, "prefix", "", "only keys that start with this `text`")
			cli.EnumListVar(fs, &o.States, "state", cli.LockStates, "only locks in these `states` (held, expiring, expired, free; comma-separated)")
			fs.BoolVar(&o.Watch, "watch", false, "list again every --interval until interrupted")
			cli.DurationVar(fs, &o.Interval, "interval", 2*time.Second, "how often --watch lists")
			fs.BoolVar(&o.JSON, "json", false, "print one JSON array (with --watch: one a line)")
			return func(ctx context.Context, env cli.Env, _ []string) int { return cli.Ls(ctx, env, o) }
		},
	},
	{
		Name: "events", Optional: []string{"KEY"},
		Summary: "print the newest events (grants, steals, releases, operator actions, rejected stale writes), of KEY or of every key, oldest first",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.EventsOptions
			cli.DurationVar(fs, &o.Since, "since", 0, "only events at most this old, e.g. 1h (0: any age)")
			fs.IntVar(&o.Limit, "limit", 100, "print at most `N` events (the newest)")
			fs.BoolVar(&o.JSON, "json", false, "print one JSON array")
			return func(ctx context.Context, env cli.Env, args []string) int {
				if len(args) > 0 {
					o.Key = args[0]
				}
				return cli.Events(ctx, env, o)
			}
		},
	},
	{
		Name: "acquire", Args: []string{"KEY"},
		Summary: "take KEY for --owner, or renew it if --owner already holds it (exit 3: held by another owner)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.AcquireOptions
			cli.OwnerVar(fs, &o.Owner, "owner", "owner `id` (default: a new host:pid:random id, printed)")
			cli.TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "lease length")
			cli.DurationVar(fs, &o.Wait, "wait", 0, "wait up to this long while another owner holds KEY (0: try once)")
			fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
			return func(ctx context.Context, env cli.Env, args []string) int {
				o.Key = args[0]
				return cli.Acquire(ctx, env, o)
			}
		},
	},
	{
		Name: "run", Args: []string{"KEY"}, Trailing: "CMD ARGS…",
		Summary: "run CMD while holding KEY: renew the lease while it runs, release it when it ends, exit with its status (exit 4: lease lost, CMD stopped)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.RunOptions
			cli.OwnerVar(fs, &o.Owner, "owner", "owner `id` (default: a new host:pid:random id)")
			cli.TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "lease length; renewed every third of it while CMD runs")
			cli.DurationVar(fs, &o.Wait, "wait", 0, "wait up to this long while another owner holds KEY (0: try once)")
			cli.DurationVar(fs, &o.Grace, "grace", 10*time.Second, "if the lease is lost: time between SIGTERM and SIGKILL to CMD")
			return func(ctx context.Context, env cli.Env, args []string) int {
				o.Key, o.Command = args[0], args[1:]
				return cli.Run(ctx, env, o)
			}
		},
	},
	{
		Name: "renew", Args: []string{"KEY"},
		Summary: "extend the lease --owner holds with --token (exit 4: not held)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.LeaseOptions
			cli.OwnerVar(fs, &o.Owner, "owner", "owner `id` of the lease")
			cli.TokenVar(fs, &o.Token, "token", "fencing token of the lease")
			cli.TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "new lease length, from now")
			fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
			cli.Required(fs, "owner", "token")
			return func(ctx context.Context, env cli.Env, args []string) int {
				o.Key = args[0]
				return cli.Renew(ctx, env, o)
			}
		},
	},
	{
		Name: "release", Args: []string{"KEY"},
		Summary: "free the lease --owner holds with --token (exit 4: not held)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.LeaseOptions
			cli.OwnerVar(fs, &o.Owner, "owner", "owner `id` of the lease")
			cli.TokenVar(fs, &o.Token, "token", "fencing token of the lease")
			fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
			cli.Required(fs, "owner", "token")
			return func(ctx context.Context, env cli.Env, args []string) int {
				o.Key = args[0]
				return cli.Release(ctx, env, o)
			}
		},
	},
	{
		Name: "expire", Args: []string{"KEY"},
		Summary: "force-expire KEY's lease as an operator; only if --token (default: the current one) is still current (exit 4 otherwise)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.ExpireOptions
			cli.TokenVar(fs, &o.Token, "token", "token to expire (default: the key's current token)")
			fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
			return func(ctx context.Context, env cli.Env, args []string) int {
				o.Key = args[0]
				return cli.Expire(ctx, env, o)
			}
		},
	},
	{
		Name: "force-release", Args: []string{"KEY"},
		Summary: "free KEY's lease as an operator; only if --token (default: the current one) is still current (exit 4 otherwise)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.ExpireOptions
			cli.TokenVar(fs, &o.Token, "token", "token to free (default: the key's current token)")
			fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
			return func(ctx context.Context, env cli.Env, args []string) int {
				o.Key = args[0]
				return cli.ForceRelease(ctx, env, o)
			}
		},
	},
	{
		Name: "metrics", Summary: "serve Prometheus metrics (locks by state, oldest held lock, waits, grants/steals/force actions/rejected writes) at http://--listen/metrics",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.MetricsOptions
			fs.StringVar(&o.Listen, "listen", "127.0.0.1:9466", "`host:port` to serve on (:9466 for every interface)")
			fs.IntVar(&o.TopKeys, "top-keys", 10, "per-key waiter series for the `N` keys with the most waiters; 0: none")
			cli.TTLVar(fs, &o.ScrapeTimeout, "scrape-timeout", 5*time.Second, "bound on one scrape's database reads")
			cli.DurationVar(fs, &o.Settle, "settle", 5*time.Second, "count an event this long after it occurred, so its transaction has committed")
			return func(ctx context.Context, env cli.Env, _ []string) int { return cli.Metrics(ctx, env, o) }
		},
	},
	cli.MigrateCommand(),
	{
		Name: "grant", Args: []string{"ROLE"},
		Summary: "give ROLE the least-privilege grants of --as viewer, operator or service on the lock tables (--print: show the SQL)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.GrantOptions
			cli.EnumVar(fs, &o.Kind, "as", cli.GrantKinds, "grant `set`: viewer (read), operator (read, force, prune) or service (hold locks)")
			fs.StringVar(&o.Schema, "schema", "", "`schema` of the lock tables (default: the connection's current schema; public with --print)")
			fs.BoolVar(&o.Print, "print", false, "print the SQL instead of running it")
			cli.Required(fs, "as")
			return func(ctx context.Context, env cli.Env, args []string) int {
				o.Role = args[0]
				return cli.Grant(ctx, env, o)
			}
		},
	},
	{
		Name: "prune", Summary: "delete lock rows free for longer than --older (and events older than --events-older)",
		Flags: func(fs *pflag.FlagSet) cli.Action {
			var o cli.PruneOptions
			cli.DurationVar(fs, &o.Older, "older", 24*time.Hour, "delete lock rows free for longer than this")
			cli.DurationVar(fs, &o.EventsOlder, "events-older", 0, "also delete events older than this (0: keep all events)")
			fs.BoolVar(&o.JSON, "json", false, "print the counts as JSON")
			return func(ctx context.Context, env cli.Env, _ []string) int { return cli.Prune(ctx, env, o) }
		},
	},
	serve.Command(),
	bench.Command(),
	demo.Command(),
}

// consoleCloseWait bounds closing the console's pool on quit, so q quits at
// once even when the server is frozen (see cli.CloseWithin).
const consoleCloseWait = 300 * time.Millisecond

func main() {
	// Ctrl-C, SIGTERM or SIGHUP cancels the command's context (with the
	// signal as its cause), so a waiting acquire removes its waiter record,
	// closes its connections and exits 128+signal.
	ctx, stop := cli.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Dispatch(ctx, cli.Program{
		Name: "lockctl", Commands: commands, Version: cli.BuildVersion(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
	}, os.Args[1:])
	stop()
	os.Exit(code)
}
