package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/locker/election"
)

// ElectCommand is `lockctl elect KEY --value V -- CMD ARGS…`.
func ElectCommand() *cobra.Command {
	var o ElectOptions
	cmd := &cobra.Command{
		Use:   "elect KEY -- CMD ARGS…",
		Short: "campaign for KEY's leadership, run CMD while leading, stop it when leadership is lost (exit 4), resign when it ends",
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			return RunE(func(ctx context.Context, env Env, args []string) int {
				o.Key, o.Command = args[0], args[dash:]
				return Elect(ctx, env, o)
			})(cmd, args)
		},
		ValidArgsFunction: completeCommandAfterDash,
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Value, "value", "", "the leader's `value` (an address, say) that `lockctl leader` shows")
	OwnerVar(fs, &o.Owner, "owner", "candidate `id` (default: a new host:pid:random id)")
	TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "lease length: a leader that dies is followed within it")
	DurationVar(fs, &o.Grace, "grace", 10*time.Second, "if leadership is lost: time between SIGTERM and SIGKILL to CMD")
	return cmd
}

// ElectOptions are elect's flags and arguments.
type ElectOptions struct {
	Key, Value, Owner string
	TTL, Grace        time.Duration
	Command           []string
}

// Elect campaigns for opts.Key and, once leading, runs opts.Command as run
// does (startChild, superviseChild: its own process group, signals passed
// on, LOCKCTL_KEY/OWNER/TOKEN with the term as token), stops it when
// leadership is lost (ExitNotHeld), and resigns when it ends, handing the
// key to the next candidate at once.
func Elect(ctx context.Context, env Env, opts ElectOptions) int {
	if len(opts.Command) == 0 || opts.Key == "" {
		return env.Usagef("elect needs KEY and -- CMD")
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	n, stopNotifier, err := StartNotifier(ctx, env, pool)
	if err != nil {
		return env.Fail(err)
	}
	defer stopNotifier()
	e, err := election.New(pool, opts.Key, election.Config{
		Owner:  opts.Owner,
		Locker: locker.Config{TTL: opts.TTL, LogGrants: true, Notifier: n},
	})
	if err != nil {
		return env.Fail(err)
	}
	term, err := e.Campaign(ctx, opts.Value)
	if err != nil {
		if ctx.Err() != nil {
			return interruptedCode(ctx)
		}
		return env.Fail(err)
	}
	bg := context.WithoutCancel(ctx)
	resign := func() {
		rctx, cancel := context.WithTimeout(bg, releaseTimeout)
		defer cancel()
		if err := e.Resign(rctx); err != nil && !errors.Is(err, locker.ErrNotHeld) { // lost: said below
			env.printLine(fmt.Sprintf("%s: warning: resigning %s: %s", env.Prog, textsafe.Escape(opts.Key), textsafe.Escape(err.Error())))
		}
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	lease := locker.Lease{Key: opts.Key, Owner: e.Owner(), Token: term}
	tty, onTerminal := foregroundTerminal(env.Stdin)
	child, err := startChild(env, opts.Command, []locker.Lease{lease}, tty)
	if err != nil {
		resign()
		env.printLine(env.Prog + ": " + textsafe.Escape(err.Error()))
		return childStartCode(err)
	}
	// A revoke of the leadership ends it as a lost lease does: no notice.
	end := superviseChild(child, signals, e.Context(), revoked{}, opts.Grace, tty)
	if onTerminal {
		giveTerminal(tty, unix.Getpgrp())
	}
	resign()
	if end.lost == nil {
		return end.code
	}
	env.printLine(fmt.Sprintf("%s: lost the leadership of %s (term %d): %s; %s",
		env.Prog, textsafe.Escape(opts.Key), term, textsafe.Escape(leaseLossReason(bg, pool, lease, end.lost)), end.stopped))
	return ExitNotHeld
}

// LeaderCommand is `lockctl leader KEY [--watch] [--json]`.
func LeaderCommand() *cobra.Command {
	var watch, asJSON bool
	cmd := &cobra.Command{
		Use:   "leader KEY",
		Short: "show KEY's leader: its owner, value and term (exit 4: nobody leads); --watch: each new one as it is elected",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(ctx context.Context, env Env, args []string) int {
			return Leader(ctx, env, args[0], watch, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "print each new leader or value until interrupted")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON, one object per leader")
	return cmd
}

// leaderJSON is one leader as `leader --json` prints it.
type leaderJSON struct {
	Key       string    `json:"key"`
	Owner     string    `json:"owner"`
	Value     string    `json:"value"`
	Term      int64     `json:"term"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Leader prints key's leader, or with watch every leader Observe reports.
func Leader(ctx context.Context, env Env, key string, watch, asJSON bool) int {
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()
	print := func(l election.Leader) int {
		if asJSON {
			return env.emit(leaderJSON{l.Key, l.Owner, l.Value, l.Term, utc(l.ExpiresAt)})
		}
		_, _ = fmt.Fprintf(env.Stdout, "%s\t%s\tterm %d\t%s\n", textsafe.Escape(l.Key), textsafe.Escape(l.Value), l.Term, textsafe.Escape(l.Owner))
		return ExitOK
	}
	if !watch {
		l, err := election.Read(ctx, pool, key)
		if errors.Is(err, election.ErrNoLeader) {
			env.printLine(fmt.Sprintf("%s: nobody leads %s", env.Prog, textsafe.Escape(key)))
			return ExitNotHeld
		}
		if err != nil {
			return env.Fail(err)
		}
		return print(l)
	}
	return watchLeader(ctx, env, pool, key, print)
}

func watchLeader(ctx context.Context, env Env, pool *pgxpool.Pool, key string, print func(election.Leader) int) int {
	e, err := election.New(pool, key, election.Config{Listen: lockdb.ConnectWith(pool.Config().ConnConfig)})
	if err != nil {
		return env.Fail(err)
	}
	for l := range e.Observe(ctx) {
		if code := print(l); code != ExitOK {
			return code
		}
	}
	return interruptedCode(ctx)
}
