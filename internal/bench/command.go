package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/locker"
)

// Command is `lockctl bench`, for main.go's command tree.
func Command() *cobra.Command {
	var o Options
	var q QueueOptions
	var k KeysOptions
	var sess SessionsOptions
	var permits int
	var asJSON, queueWorker bool
	var keepaliveLocks int
	var scenario string
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use: "bench",
		Short: "measure acquire+release cost: locker vs the reference design, the peers' keep-row upsert, commit and network floors " +
			"(a throwaway durable PostgreSQL unless --dsn; see BENCHMARKS.md)",
		RunE: cli.RunE(func(ctx context.Context, env cli.Env, _ []string) int {
			switch {
			case queueWorker:
				if err := RunQueueWorker(ctx, os.Stdin, env.Stdout); err != nil {
					return env.Fail(err)
				}
				return cli.ExitOK
			case scenario == ScenarioPooler:
				p := PoolerOptions{Duration: o.Duration, Rounds: o.Rounds, Progress: env.Stderr}
				if cmd.Flags().Changed("workers") {
					if len(o.Workers) != 1 {
						return env.Usagef("--scenario pooler measures one concurrency: give --workers one number")
					}
					p.Workers = o.Workers[0]
				}
				if !cmd.Flags().Changed("rounds") {
					p.Rounds = 0 // the scenario's own default
				}
				return runPooler(ctx, env, p, asJSON)
			case scenario == ScenarioQueue:
				q.Rounds = o.Rounds
				if cmd.Flags().Changed("duration") {
					q.Duration = o.Duration
				}
				q.Progress = env.Stderr
				return runQueue(ctx, env, q, asJSON)
			case scenario == ScenarioKeys:
				if cmd.Flags().Changed("workers") {
					k.Workers = o.Workers
				}
				k.Duration, k.Rounds, k.Progress = o.Duration, o.Rounds, env.Stderr
				return runKeys(ctx, env, k, asJSON)
			case scenario == ScenarioSemaphore:
				sem, code, ok := semaphoreOptions(cmd, env, o, q, permits)
				if !ok {
					return code
				}
				return runSemaphore(ctx, env, sem, asJSON)
			case scenario == ScenarioSessions:
				sess.TTL, sess.Progress = o.KeepaliveTTL, env.Stderr
				if cmd.Flags().Changed("keepalive-for") {
					sess.For = o.KeepaliveFor
				}
				return runSessions(ctx, env, sess, asJSON)
			case scenario != ScenarioCycles:
				return env.Usagef("--scenario must be %s, %s, %s, %s, %s or %s, got %q",
					ScenarioCycles, ScenarioQueue, ScenarioPooler, ScenarioKeys, ScenarioSessions, ScenarioSemaphore, scenario)
			}
			o.KeepaliveLocks = keepaliveLocks
			if keepaliveLocks == 0 {
				o.KeepaliveLocks = -1
			}
			if o.Rounds < 1 || o.HotKeys < 1 || keepaliveLocks < 0 || o.KeepaliveFor <= 0 {
				return env.Usagef("--rounds, --hot-keys and --keepalive-for must be positive, --keepalive-locks not negative")
			}
			o.Progress = env.Stderr
			return run(ctx, env, o, asJSON)
		}),
	}
	fs := cmd.Flags()
	fs.IntSliceVar(&o.Workers, "workers", []int{1, 8, 32}, "concurrency levels to measure")
	cli.DurationVar(fs, &o.Duration, "duration", 2*time.Second, "how long each series runs per round")
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds; results are medians over rounds")
	fs.IntVar(&o.HotKeys, "hot-keys", 4, "keys shared by all workers in the contended scenario")
	fs.IntVar(&keepaliveLocks, "keepalive-locks", 1000, "locks kept alive while measuring client CPU (0: skip)")
	cli.DurationVar(fs, &o.RTT, "rtt", 0, "simulated network round-trip time added before every statement")
	cli.DurationVar(fs, &o.KeepaliveFor, "keepalive-for", 30*time.Second, "how long keepalive CPU is measured")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON instead of Markdown")
	fs.StringVar(&scenario, "scenario", ScenarioCycles, "what to measure, `cycles|queue|pooler|keys|sessions|semaphore`: acquire+release cost, "+
		"many waiters handing one key over against pg_advisory_lock, lock cycles and one-row UPDATEs through PgBouncer against direct, "+
		"a set of keys taken at once against one by one and how fast a deadlock is reported, "+
		"many leases kept by one session against a keepalive each, "+
		"or workers taking permits of one semaphore key against as many mutex keys")
	fs.IntSliceVar(&sess.Leases, "leases", []int{100, 10000}, "sessions scenario: numbers of leases kept (a list measures each)")
	fs.IntSliceVar(&q.Waiters, "waiters", []int{64}, "queue scenario: waiters on the one key (a list measures each); semaphore scenario: "+
		"the workers, one number (default 16)")
	fs.IntVar(&q.Processes, "processes", 4, "queue scenario: worker processes the waiters are spread over (semaphore scenario: default 2)")
	cli.DurationVar(fs, &q.Hold, "hold", 2*time.Millisecond, "queue and semaphore scenarios: how long each grant is held")
	fs.IntVar(&permits, "permits", 4, "semaphore scenario: permits of the semaphore key, and how many mutex keys it is measured against")
	fs.IntVar(&k.Keys, "keys", 4, "keys scenario: keys in each set")
	fs.StringSliceVar(&k.Modes, "modes", []string{locker.ModeExclusive}, "keys scenario: the modes of a set's keys, in turn, "+
		"`exclusive|shared|semaphore:N`; any but exclusive measures a mixed-mode set")
	fs.IntVar(&k.Deadlocks, "deadlocks", 10, "keys scenario: deadlocks closed each way (one wait after the other, two at once)")
	fs.BoolVar(&queueWorker, queueWorkerFlag, false, "run as a queue worker process (internal)")
	_ = fs.MarkHidden(queueWorkerFlag)
	return cli.ExplicitOnly(cmd)
}

// Scenario names for --scenario.
const (
	ScenarioCycles = "cycles"
	ScenarioQueue  = "queue"
	ScenarioPooler = "pooler"
	ScenarioKeys   = "keys"
	// ScenarioSessions keeps many leases with one session beside one
	// keepalive per lease (sessions.go).
	ScenarioSessions = "sessions"
	// ScenarioSemaphore takes permits of one semaphore key beside as many
	// mutex keys (semaphore.go).
	ScenarioSemaphore = "semaphore"
)

// queueWorkerFlag marks a worker process of the queue scenario, which the
// parent starts from this same executable.
const queueWorkerFlag = "queue-worker"

func run(ctx context.Context, env cli.Env, o Options, asJSON bool) int {
	if _, err := o.withDefaults(); err != nil {
		return refusedOptions(env, err)
	}
	return withServer(ctx, env, nil, "default settings", asJSON, func(dsn string) (markdownReport, error) {
		return Run(ctx, dsn, o)
	})
}

func runQueue(ctx context.Context, env cli.Env, q QueueOptions, asJSON bool) int {
	if _, err := q.withDefaults(); err != nil {
		return refusedOptions(env, err)
	}
	settings := "max_connections=" + QueueServerSettings["max_connections"]
	return withServer(ctx, env, QueueServerSettings, settings, asJSON, func(dsn string) (markdownReport, error) {
		return RunQueue(ctx, dsn, q)
	})
}

// semaphoreOptions are the semaphore scenario's options from the flags it
// shares with the queue scenario, which it takes only when given: its own
// defaults are the load. ok false: code is the usage error.
func semaphoreOptions(cmd *cobra.Command, env cli.Env, o Options, q QueueOptions, permits int) (sem SemaphoreOptions, code int, ok bool) {
	fs := cmd.Flags()
	sem = SemaphoreOptions{Permits: permits, Rounds: o.Rounds, Progress: env.Stderr}
	if fs.Changed("waiters") {
		if len(q.Waiters) != 1 {
			return sem, env.Usagef("--scenario semaphore measures one number of workers: give --waiters one number"), false
		}
		sem.Workers = q.Waiters[0]
	}
	if fs.Changed("processes") {
		sem.Processes = q.Processes
	}
	if fs.Changed("hold") {
		sem.Hold = q.Hold
	}
	if fs.Changed("duration") {
		sem.Duration = o.Duration
	}
	if o.Rounds < 1 || permits < 1 {
		return sem, env.Usagef("--rounds and --permits must be positive"), false
	}
	return sem, 0, true
}

func runSemaphore(ctx context.Context, env cli.Env, o SemaphoreOptions, asJSON bool) int {
	if _, err := o.withDefaults(); err != nil {
		return refusedOptions(env, err)
	}
	settings := "max_connections=" + QueueServerSettings["max_connections"]
	return withServer(ctx, env, QueueServerSettings, settings, asJSON, func(dsn string) (markdownReport, error) {
		return RunSemaphore(ctx, dsn, o)
	})
}

func runSessions(ctx context.Context, env cli.Env, o SessionsOptions, asJSON bool) int {
	if _, err := o.withDefaults(); err != nil {
		return refusedOptions(env, err)
	}
	return withServer(ctx, env, nil, "default settings", asJSON, func(dsn string) (markdownReport, error) {
		return RunSessions(ctx, dsn, o)
	})
}

func runKeys(ctx context.Context, env cli.Env, k KeysOptions, asJSON bool) int {
	if _, err := k.withDefaults(); err != nil {
		return refusedOptions(env, err)
	}
	return withServer(ctx, env, nil, "default settings", asJSON, func(dsn string) (markdownReport, error) {
		return RunKeys(ctx, dsn, k)
	})
}

// runPooler runs the pooler scenario on a throwaway server: it starts
// PgBouncer in front of it and measures in the server's default schema,
// neither of which it may do to a server the user names.
func runPooler(ctx context.Context, env cli.Env, p PoolerOptions, asJSON bool) int {
	if _, err := p.withDefaults(); err != nil {
		return refusedOptions(env, err)
	}
	if env.ExplicitDSN != "" {
		return env.Usagef("--scenario pooler starts its own PostgreSQL and PgBouncer; it takes no --dsn")
	}
	if _, err := pgtemp.FindBouncer(); err != nil {
		return env.Fail(err)
	}
	fmt.Fprintf(env.Stderr, "%s: starting a throwaway PostgreSQL (durable commits, default settings) and PgBouncer\n", env.Prog)
	srv, err := pgtemp.Start(ctx, pgtemp.Options{})
	if err != nil {
		return env.Fail(err)
	}
	defer srv.Close()
	rep, err := RunPooler(ctx, srv, p)
	if err != nil {
		return env.Fail(err)
	}
	return printReport(env, rep, asJSON)
}

// refusedOptions is the exit for options withDefaults refused: the
// problem, as a usage message.
func refusedOptions(env cli.Env, err error) int {
	if oe, ok := errors.AsType[*OptionError](err); ok {
		return env.Usagef("%s", oe.Problem)
	}
	return env.Fail(err)
}

// withServer runs measure on the server --dsn names, else on a throwaway
// PostgreSQL it starts with settings, telling the user so (described names
// the settings), and prints the report.
func withServer(ctx context.Context, env cli.Env, settings map[string]string, described string, asJSON bool,
	measure func(dsn string) (markdownReport, error)) int {
	// Not env.DSN, which falls back to $DATABASE_URL: a benchmark must not
	// load a server the user did not name.
	dsn := env.ExplicitDSN
	if dsn == "" {
		fmt.Fprintf(env.Stderr, "%s: starting a throwaway PostgreSQL (durable commits, %s)\n", env.Prog, described)
		srv, err := pgtemp.Start(ctx, pgtemp.Options{Settings: settings})
		if err != nil {
			return env.Fail(err)
		}
		defer srv.Close()
		dsn = srv.DSN("")
	}
	rep, err := measure(dsn)
	if err != nil {
		return env.Fail(err)
	}
	return printReport(env, rep, asJSON)
}

// markdownReport is a report that prints itself as Markdown.
type markdownReport interface{ WriteMarkdown(io.Writer) error }

func printReport(env cli.Env, rep markdownReport, asJSON bool) int {
	var err error
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
