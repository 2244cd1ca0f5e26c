package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/lockctl/lockctl/internal/textsafe"
	"github.com/lockctl/lockctl/locker"
)

// RunCommand is `lockctl run KEY -- CMD ARGS…`.
func RunCommand() *cobra.Command {
	var o RunOptions
	cmd := &cobra.Command{
		Use:        "run KEY… -- CMD ARGS…",
		Short:      "run CMD while holding KEY (several: all of them): renew the leases while it runs, release them when it ends, exit with its status (exit 4: a lease lost, CMD stopped)",
		SuggestFor: []string{"exec"},
		RunE: func(cmd *cobra.Command, args []string) error {
			// checkArgs has made sure of KEY… before "--" and CMD after it.
			dash := cmd.ArgsLenAtDash()
			return RunE(func(ctx context.Context, env Env, args []string) int {
				o.Key, o.Keys, o.Command = args[0], args[:dash], args[dash:]
				return Run(ctx, env, o)
			})(cmd, args)
		},
		ValidArgsFunction: completeCommandAfterDash,
	}
	fs := cmd.Flags()
	OwnerVar(fs, &o.Owner, "owner", "owner `id` (default: a new host:pid:random id)")
	TTLVar(fs, &o.TTL, "ttl", 30*time.Second, "lease length; renewed every third of it while CMD runs")
	DurationVar(fs, &o.Wait, "wait", 0, "wait up to this long while another owner holds KEY (0: try once)")
	LockDelayVar(fs, &o.LockDelay)
	AtLeastVar(fs, &o.AtLeast)
	holdModeVars(fs, &o.AcquireOptions)
	DurationVar(fs, &o.Grace, "grace", 10*time.Second, "if the lease is lost: time between SIGTERM and SIGKILL to CMD")
	fs.StringVar(&o.RevokeSignal, "revoke-signal", "TERM", "`signal` CMD gets when an operator revokes its lease (lockctl revoke): TERM, INT, HUP, QUIT, USR1, USR2, or none")
	return cmd
}

// completeCommandAfterDash completes a command's CMD: after "--" the
// words are CMD's, the shell's own (file) completion; none before.
func completeCommandAfterDash(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if cmd.ArgsLenAtDash() >= 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// RunOptions are run's flags and arguments.
type RunOptions struct {
	AcquireOptions               // Key, Owner, TTL, Wait, LockDelay, Shared, Permits (JSON is unused)
	Grace          time.Duration // after SIGTERM on a lost lease, how long before SIGKILL
	RevokeSignal   string        // the signal CMD gets on a revoke (revokeSignals), "none": none
	Command        []string      // the command and its arguments, after "--"
}

// releaseTimeout bounds the release after the command ends, so a dead
// database cannot hold up the exit (the lease then expires at its TTL).
const releaseTimeout = 5 * time.Second

// Run takes opts.Key, or every key of opts.Keys all or none (waiting up to
// opts.Wait), runs opts.Command while a session (locker.Session) keeps the
// leases with one heartbeat per interval (keepLeases), releases them when the command ends and returns the command's exit
// status (128+signal if a signal ended it).
//
// The command gets LOCKCTL_KEY, LOCKCTL_OWNER and LOCKCTL_TOKEN (the fencing
// token), and for several keys each key's (childEnv), in its environment and runs in its own process group: SIGINT,
// SIGTERM and SIGHUP sent to lockctl are passed on to that group once each.
// On a terminal lockctl has in the foreground, that group gets the
// terminal for as long as it runs (foreground.go).
// If a lease is lost (force-expired, or renewals failed until it could
// expire), the group gets SIGTERM, then SIGKILL after opts.Grace, and Run
// returns ExitNotHeld with a message saying so. If an operator revokes a
// lease (lockctl revoke), the group gets opts.RevokeSignal (SIGTERM) once,
// with a message naming who and why: a command that then exits ends
// cleanly, its leases released.
func Run(ctx context.Context, env Env, opts RunOptions) int {
	if err := opts.check(); err != nil {
		return env.Fail(err)
	}
	held, code := takeLeases(ctx, env, opts.AcquireOptions)
	if held == nil {
		return code
	}
	pool, lk, leases := held.pool, held.lk, held.leases
	defer pool.Close()

	// From here on a signal is the command's to handle: lockctl passes it
	// on, and keeps renewing and then releases whatever the command does.
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	bg := context.WithoutCancel(ctx)
	release := func() {
		rctx, cancel := context.WithTimeout(bg, releaseTimeout)
		defer cancel()
		if err := releaseLeases(rctx, lk, pool, leases); err != nil {
			env.printLine(fmt.Sprintf("%s: warning: releasing %s: %s", env.Prog,
				textsafe.Escape(opts.Key), textsafe.Escape(err.Error())))
		}
	}
	if ctx.Err() != nil { // a signal arrived before lockctl could pass it on
		release()
		env.printLine(fmt.Sprintf("%s: interrupted before starting %s", env.Prog, textsafe.Escape(opts.Command[0])))
		return interruptedCode(ctx)
	}

	keep, closeKeeper, err := keepLeases(bg, lk, pool, leases)
	if err != nil {
		release()
		return env.Fail(err)
	}
	tty, onTerminal := foregroundTerminal(env.Stdin)
	child, err := startChild(env, opts.Command, leases, tty)
	if err != nil {
		keep.Stop()
		release()
		closeKeeper()
		env.printLine(env.Prog + ": " + textsafe.Escape(err.Error()))
		return childStartCode(err)
	}
	onRevoke := revokeNotice(env, keep, revokeSignals[strings.ToUpper(opts.RevokeSignal)])
	end := superviseChild(child, signals, keep.Context(), onRevoke, opts.Grace, tty)
	if onTerminal {
		giveTerminal(tty, unix.Getpgrp())
	}
	keep.Stop()
	if end.lost == nil {
		release()
		closeKeeper()
		return end.code
	}
	closeKeeper()
	lease := lostLease(leases, end.lost)
	env.printLine(fmt.Sprintf("%s: lost the lease on %s (token %d): %s; %s",
		env.Prog, textsafe.Escape(lease.Key), lease.Token, textsafe.Escape(leaseLossReason(bg, pool, lease, end.lost)), end.stopped))
	return ExitNotHeld
}

// check validates what the flag types cannot, before connecting.
func (o RunOptions) check() error {
	if err := o.AcquireOptions.check(); err != nil {
		return err
	}
	if len(o.Command) == 0 || o.Command[0] == "" {
		return usagef("missing CMD after --")
	}
	if _, ok := revokeSignals[strings.ToUpper(o.RevokeSignal)]; !ok {
		return usagef("invalid --revoke-signal %q: want TERM, INT, HUP, QUIT, USR1, USR2 or none", o.RevokeSignal)
	}
	return nil
}

// childEnv is the command's environment: lockctl's own, plus the leases:
// LOCKCTL_KEY, LOCKCTL_OWNER and LOCKCTL_TOKEN of the first key named, and
// with several keys LOCKCTL_KEY_COUNT (how many) and LOCKCTL_KEY_n,
// LOCKCTL_TOKEN_n for each, n from 1 in the order named.
func childEnv(leases []locker.Lease) []string {
	env := append(os.Environ(),
		"LOCKCTL_KEY="+leases[0].Key,
		"LOCKCTL_OWNER="+leases[0].Owner,
		"LOCKCTL_TOKEN="+strconv.FormatInt(leases[0].Token, 10))
	if len(leases) == 1 {
		return env
	}
	env = append(env, "LOCKCTL_KEY_COUNT="+strconv.Itoa(len(leases)))
	for i, l := range leases {
		n := strconv.Itoa(i + 1)
		env = append(env, "LOCKCTL_KEY_"+n+"="+l.Key, "LOCKCTL_TOKEN_"+n+"="+strconv.FormatInt(l.Token, 10))
	}
	return env
}

// takeLeases is takeLease for run: one key, or several all or none.
func takeLeases(ctx context.Context, env Env, opts AcquireOptions) (*heldSet, int) {
	if len(opts.Keys) > 1 {
		return takeSet(ctx, env, opts)
	}
	held, code := takeLease(ctx, env, opts)
	if held == nil {
		return nil, code
	}
	return &heldSet{pool: held.pool, lk: held.lk, leases: []locker.Lease{held.lease}}, code
}

// releaseLeases releases one lease, or a set in one statement.
func releaseLeases(ctx context.Context, lk *locker.Locker, pool locker.DBTX, leases []locker.Lease) error {
	_, err := lk.Release(ctx, pool, leases...)
	return err
}

// lostLease is the lease of leases a Keepalive's loss names.
func lostLease(leases []locker.Lease, lost error) locker.Lease {
	var e *locker.Error
	if errors.As(lost, &e) {
		for _, l := range leases {
			if l.Key == e.Key {
				return l
			}
		}
	}
	return leases[0]
}

// childStartCode is the shell's code for a command that could not start:
// 127 when it was not found, 126 when it could not be executed.
func childStartCode(err error) int {
	if errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}
